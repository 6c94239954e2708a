"""A wave gives the sink what one change table of all its batches would: last row per key, every change."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from airflow_mysql_cdc.engine.lake.change_table import build_change_tables, concat_change_tables
from airflow_mysql_cdc.engine.lake.change_waves import Wave, WaveTable
from airflow_mysql_cdc.engine.lake.delta_layout import changelog_schema
from tests.unit.sink_fixtures import ORDERS, delete, insert, through, transaction, update


def _batches():
    row = lambda key, status, qty=1: {"id": key, "status": status, "qty": qty}  # noqa: E731
    return [
        [transaction(1, insert(ORDERS, row(1, "new")), insert(ORDERS, row(2, "new")))],
        [
            transaction(2, update(ORDERS, row(1, "new"), row(1, "paid"))),
            transaction(3, delete(ORDERS, row(2, "new"))),
        ],
        [
            transaction(4, update(ORDERS, row(1, "paid"), row(7, "moved"))),
            transaction(5, insert(ORDERS, row(1, "again"))),
        ],
        [
            transaction(
                6, insert(ORDERS, row(2, "back")), update(ORDERS, row(7, "moved"), row(7, "shipped", 9))
            )
        ],
    ]


def _whole():
    return concat_change_tables([build_change_tables(batch) for batch in _batches()])["shop.orders"]


def _wave_table(tmp_path: Path, spill_after: int | None = None) -> WaveTable:
    table = WaveTable(ORDERS, tmp_path)
    for number, batch in enumerate(_batches()):
        table.add(build_change_tables(batch)["shop.orders"])
        if spill_after is not None and number >= spill_after:
            table.spill()
    return table


def _changelog(table) -> list[dict]:
    schema = changelog_schema(ORDERS.columns)
    return pa.concat_tables(list(table.changelog_tables(schema))).to_pylist()


def test_a_wave_gives_the_last_row_per_key_and_every_change_like_one_batch(tmp_path: Path) -> None:
    whole = _whole()
    for spill_after in (None, 0, 2):
        wave = _wave_table(tmp_path, spill_after)
        assert wave.target_rows().to_pylist() == whole.target_rows().to_pylist()
        assert _changelog(wave) == _changelog(whole)
        assert wave.change_count == whole.change_count == 8
        assert wave.transaction_count == whole.transaction_count == 6


def test_a_replay_leaves_out_what_a_table_already_holds_in_a_wave_too(tmp_path: Path) -> None:
    held = through(2)
    for spill_after in (None, 1):
        wave = _wave_table(tmp_path, spill_after).without(held)
        whole = _whole().without(held)
        assert wave.target_rows().to_pylist() == whole.target_rows().to_pylist()
        assert _changelog(wave) == _changelog(whole)
        assert wave.change_count == whole.change_count
        assert wave.transaction_count == whole.transaction_count == 4  # transactions 1 and 2 held


def test_a_wave_spills_its_changelog_rows_above_its_memory_bound_and_deletes_them_when_cleared() -> None:
    wave = Wave(max_rows=100, memory_bytes=1)
    wave.add(build_change_tables(_batches()[0]), transactions=1)
    assert wave.spilled and not wave.full
    files = list(Path(wave._spill_dir()).iterdir())
    assert files
    for batch in _batches()[1:]:
        wave.add(build_change_tables(batch), transactions=len(batch))
    assert wave.rows == _whole().rows.num_rows and wave.transactions == 6
    wave.clear()
    assert not any(path.exists() for path in files)
