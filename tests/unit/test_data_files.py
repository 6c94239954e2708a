"""Data files written where the rows are (an executor) and committed by the driver: real Parquet,
real delta-rs tables on the local file system."""

from __future__ import annotations

import datetime
import json
import os
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import AddAction

from airflow_mysql_cdc.engine.lake.data_files import (
    DataFileMissingError,
    delta_statistics,
    executor_writes_supported,
    require_written,
    write_data_file,
)

ROWS = pa.table(
    {
        "id": pa.array([3, 1, None, 7], pa.int64()),
        "small": pa.array([-2, 5, 0, 1], pa.int16()),
        "name": pa.array(["b", "a", "zz", None], pa.string()),
        "long_text": pa.array(["x" * 80, "y", None, None], pa.string()),
        "day": pa.array([datetime.date(2026, 1, 2), None, datetime.date(2025, 12, 31), None], pa.date32()),
        "amount": pa.array([Decimal("1.50"), None, Decimal("-2.25"), None], pa.decimal128(10, 2)),
        "at": pa.array(
            [datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)] * 4, pa.timestamp("us", tz="UTC")
        ),
        "ratio": pa.array([0.5, 2.5, None, 1.0], pa.float64()),
        "flag": pa.array([True, False, None, True], pa.bool_()),
    }
)


def _add_action_stats(table_path: str) -> dict:
    """The statistics delta-rs parsed for the table's (single) file, as Python values."""
    actions = pa.table(DeltaTable(table_path).get_add_actions(flatten=False)).to_pylist()
    assert len(actions) == 1
    return actions[0]


def _commit(table_path: str, files: list) -> None:
    DeltaTable(table_path).create_write_transaction(
        [AddAction(f.path, f.size, {}, f.modification_time_ms, True, f.stats) for f in files],
        mode="append",
        schema=ROWS.schema,
    )


def test_statistics_are_what_delta_rs_reads_and_bound_only_where_exact(tmp_path: Path) -> None:
    write_deltalake(str(tmp_path / "theirs"), ROWS)
    ours_path = str(tmp_path / "ours")
    write_deltalake(ours_path, ROWS.schema.empty_table())
    _commit(ours_path, [write_data_file(ours_path, ROWS, None)])
    ours, theirs = _add_action_stats(ours_path), _add_action_stats(str(tmp_path / "theirs"))
    assert ours["num_records"] == theirs["num_records"] == 4
    assert ours["null_count"] == theirs["null_count"]
    bounded = {"id", "small", "name", "day"}  # exact bounds only: no decimals, floats, timestamps
    assert {c for c, v in ours["min"].items() if v is not None} == bounded
    for column in bounded:
        assert (ours["min"][column], ours["max"][column]) == (theirs["min"][column], theirs["max"][column])
    assert "long_text" not in json.loads(delta_statistics(ROWS))["minValues"]  # longer than 64 characters


def test_a_column_of_only_nulls_has_a_null_count_and_no_bounds() -> None:
    stats = json.loads(delta_statistics(pa.table({"id": pa.nulls(3, pa.int64())})))
    assert stats == {"numRecords": 3, "minValues": {}, "maxValues": {}, "nullCount": {"id": 3}}


def test_files_written_apart_and_committed_by_the_driver_read_back_exactly(tmp_path: Path) -> None:
    table_path = str(tmp_path / "target")
    write_deltalake(table_path, ROWS.schema.empty_table())
    halves = [ROWS.slice(0, 2), ROWS.slice(2)]
    files = [write_data_file(table_path, half, None) for half in halves]
    require_written(table_path, files, None)
    _commit(table_path, files)
    read = DeltaTable(table_path).to_pyarrow_table().sort_by([("small", "ascending")])
    assert read.equals(ROWS.sort_by([("small", "ascending")]))
    # delta-rs prunes files by the statistics: each key range finds only its own file
    pruned = DeltaTable(table_path).to_pyarrow_dataset().to_table(filter=pa.compute.field("id") == 7)
    assert pruned.column("id").to_pylist() == [7]


def test_a_file_the_driver_cannot_see_is_refused_before_any_commit(tmp_path: Path) -> None:
    table_path = str(tmp_path / "target")
    written = write_data_file(table_path, ROWS, None)
    os.remove(Path(table_path) / written.path)  # written on an executor host, not shared with the driver
    with pytest.raises(DataFileMissingError, match="not the same shared file system.*Nothing was committed"):
        require_written(table_path, [written], None)


def test_executors_write_local_and_s3_lakes_and_hand_other_stores_rows() -> None:
    assert executor_writes_supported("/lake/shop/orders")
    assert executor_writes_supported("file:///lake/shop/orders")
    assert executor_writes_supported("s3://bucket/shop/orders")
    assert not executor_writes_supported("gs://bucket/shop/orders")
    assert not executor_writes_supported("abfss://c@account.dfs.core.windows.net/shop/orders")


def test_a_new_file_never_replaces_another(tmp_path: Path) -> None:
    names = {write_data_file(str(tmp_path / "t"), ROWS, None).path for _ in range(3)}
    assert len(names) == 3
