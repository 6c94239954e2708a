"""A crash inside a schema change's application is replayed exactly: nothing twice, nothing lost.

An evolution is several Delta commits (add the columns, give existing rows their value, record the
position) followed by the pipeline state's commit. The crash is simulated at each of those points,
as ``test_crash_between_table_commits_replays_nothing_twice`` does for batches; the replay from the
state's position must leave the lake as one uninterrupted application would.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.binlog.changes import TableShape
from airflow_mysql_cdc.engine.lake import evolution_writes
from airflow_mysql_cdc.engine.lake.delta_sink import DeltaSink
from airflow_mysql_cdc.engine.lake.evolution import AddedColumn, TableEvolution
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from tests.unit.sink_fixtures import BASE_US, ORDERS, SOURCE_UUID, insert, through, transaction

ORDERS_WITH_NOTE = TableShape("shop", "orders", (*ORDERS.columns, ColumnType("note", "text")), ("id",))
ADD_NOTE = TableEvolution.evolving(
    "shop.orders", "added note", (AddedColumn(ColumnType("note", "text"), "n/a"),), ()
)


def _apply_until_the_ddl(sink: DeltaSink) -> None:
    sink.apply([transaction(1, insert(ORDERS, {"id": 1, "status": "a", "qty": 1}))], through(1))


def _apply_the_ddl_and_after(sink: DeltaSink) -> None:
    sink.apply_schema_change(
        f"{SOURCE_UUID}:2", "ALTER TABLE orders ADD note ...", BASE_US, [ADD_NOTE], through(2)
    )
    sink.apply(
        [transaction(3, insert(ORDERS_WITH_NOTE, {"id": 2, "status": "b", "qty": 2, "note": "new"}))],
        through(3),
    )


def _rows(sink: DeltaSink, kind: str) -> list[dict]:
    path = (
        sink.layout.target("shop", "orders") if kind == "target" else sink.layout.changelog("shop", "orders")
    )
    return sorted(
        DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: (r["id"], r["_cdc_gtid"])
    )


@pytest.mark.parametrize(
    "crash_at",
    ["after adding the columns", "after the existing rows got their value", "before the state commit"],
)
def test_a_crash_inside_a_schema_change_is_replayed_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_at: str
) -> None:
    reference = DeltaSink.at(tmp_path / "reference", "p1")
    reference.open(through(0))
    _apply_until_the_ddl(reference)
    _apply_the_ddl_and_after(reference)

    sink = DeltaSink.at(tmp_path / "lake", "p1")
    sink.open(through(0))
    _apply_until_the_ddl(sink)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt(f"simulated kill -9 {crash_at}")

    if crash_at == "after adding the columns":
        monkeypatch.setattr(evolution_writes, "set_existing_rows", crash)
    elif crash_at == "after the existing rows got their value":
        monkeypatch.setattr(evolution_writes, "record_dropped", crash)
    else:  # the DDL's intent commit (which also records the batch before it) goes through
        commit, commits = sink._state_store.commit, []

        def intent_then_crash(*args, **kwargs):
            commits.append(args)
            return commit(*args, **kwargs) if len(commits) == 1 else crash()

        monkeypatch.setattr(sink._state_store, "commit", intent_then_crash)
    with pytest.raises(KeyboardInterrupt):
        _apply_the_ddl_and_after(sink)
    monkeypatch.undo()

    recovered = DeltaSink.at(tmp_path / "lake", "p1", lease_s=0)  # the crashed writer's lease looks alive
    assert recovered.open(through(0)) == through(1)
    _apply_the_ddl_and_after(recovered)

    volatile = ("_cdc_commit_ts", "_cdc_commit_date")
    for kind in ("target", "changelog"):
        expected = [{k: v for k, v in r.items() if k not in volatile} for r in _rows(reference, kind)]
        assert [{k: v for k, v in r.items() if k not in volatile} for r in _rows(recovered, kind)] == expected
    assert [r["note"] for r in _rows(recovered, "target")] == ["n/a", "new"]
