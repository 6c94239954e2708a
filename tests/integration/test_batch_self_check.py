"""Every batch checks itself, on the real path: MySQL's binlog, the binlog application, Delta tables.

A row deleted from a target with deltalake behind the pipeline's back, then a transaction that
updates it and a row of another table: the batch's MERGE into the first target inserts where the
binlog says the row existed (:mod:`airflow_mysql_cdc.engine.lake.batch_check`). That table stops,
alone, with a message naming it, the batch's GTIDs, the counts and the way out; the other table is
exact; later runs keep it out and say so; a re-snapshot brings it back.

The delete carries the pipeline's own-commit mark, as a commit of the pipeline that left the target
wrong would (issue 33: a MERGE that missed rows): a plain delete by another writer is caught
earlier, by the next run's open (tests/integration/test_outside_changes.py), and within a run by
the fence; the batch's check is what catches a wrong table no commit history can tell apart.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyResult
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.lake.delta_sink import DeltaSink
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.state.own_commits import own_commit
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.lake import assert_lake_equals_source
from tests.support.mysql import execute
from tests.support.pipeline import seed
from tests.unit.sink_fixtures import (
    ITEMS,
    ORDERS,
    SOURCE_UUID,
    crash_before_the_state_commit,
    delete,
    insert,
    through,
    transaction,
    update,
)


def _run(endpoint: MySqlEndpoint, lake: Path, tables: tuple[str, ...], start: GtidSet) -> ApplyResult:
    return run_apply(
        ApplyConfig(
            pipeline_id="selfcheck", lake_root=str(lake), tables=tables, start_gtids=start,
            mode="until_caught_up", batch_max_seconds=0.2, heartbeat_s=0.5,
        ),
        endpoint,
    )  # fmt: skip


@pytest.mark.mysql
def test_a_row_deleted_behind_the_pipelines_back_stops_only_its_table(
    mysql_database: MySqlEndpoint, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = mysql_database.database
    orders, payments = f"{database}.orders", f"{database}.payments"
    tables = (orders, payments)
    for table in ("orders", "payments"):
        seed(mysql_database, table, 30)
    starts = [snapshot_table(mysql_database, tmp_path, name).stream_start for name in tables]
    first = _run(mysql_database, tmp_path, tables, starts[0] & starts[1])
    assert first.stopped == []

    target = DeltaTable(LakeLayout(tmp_path).target(database, "orders"))
    target.delete("id = 7", commit_properties=own_commit(None, target))  # behind its back
    execute(
        mysql_database,
        "BEGIN",
        "UPDATE orders SET status = 'paid' WHERE id = 7",
        "UPDATE payments SET status = 'paid' WHERE id = 3",
        "COMMIT",
    )
    with caplog.at_level(logging.ERROR):
        second = _run(mysql_database, tmp_path, tables, first.end_gtids)

    batch = second.end_gtids - first.end_gtids
    message = (
        f"{orders}: the batch applying {batch} implied 1 updated, 0 inserted, 0 deleted, but its MERGE "
        "into the target 0 updated, 1 inserted, 0 deleted: the target did not hold the source's rows "
        "before this batch (a row written or deleted behind the pipeline's back, or a MERGE that missed "
        "rows), so its lake copy is wrong now. The pipeline stopped streaming it (the other tables go "
        'on) until it is snapshotted again: re-snapshot the table (docs/operations.md, "A table '
        'stopped"). Only this pipeline may write its Delta tables: find out who else did first.'
    )
    assert [stop.describe() for stop in second.stopped] == [message]
    assert second.stopped_tables == {orders: message}
    assert message in caplog.text
    assert_lake_equals_source(mysql_database, tmp_path, database, "payments")  # the other table went on
    lake = LakeState(tmp_path, "selfcheck")
    state = lake.pipeline()
    assert state is not None and state.applied_gtids == second.end_gtids
    assert set(state.members or {}) == {payments}
    departure = lake.departure(TableRef.parse(orders))
    assert departure is not None and departure.stopped and departure.snapshot_id

    # Later runs keep it out and say so each time, as long as no snapshot replaced it.
    execute(mysql_database, "UPDATE orders SET status = 'shipped' WHERE id = 8")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        third = _run(mysql_database, tmp_path, tables, second.end_gtids)
    assert third.stopped == [] and third.stopped_tables == {orders: message}
    assert f"{orders} is not streamed: {message}" in caplog.text
    status = DeltaTable(LakeLayout(tmp_path).target(database, "orders")).to_pyarrow_table().to_pylist()
    assert {row["id"]: row["status"] for row in status}[8] == "new"  # not streamed

    # The way out: a re-snapshot replaces its rows; it joins again, exact.
    snapshot_table(mysql_database, tmp_path, orders, restart=True)
    fourth = _run(mysql_database, tmp_path, tables, third.end_gtids)
    assert fourth.stopped_tables == {} and orders in (
        LakeState(tmp_path, "selfcheck").pipeline().members or {}
    )
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")


def test_a_stop_a_crash_interrupted_is_completed_by_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop's mark is committed with the batch's app transaction before the state records the
    position and the members; killed in between, the next open finds the mark and completes it."""
    tables = ("shop.orders", "shop.items")
    first = DeltaSink.at(tmp_path, "p1", tables=tables)
    first.open(through(0))
    first.record_members({"shop.orders": "", "shop.items": ""})
    first.apply([transaction(1, insert(ORDERS, {"id": 1, "status": "new", "qty": 1}))], through(1))
    first.release()
    target = DeltaTable(first.layout.target("shop", "orders"))
    target.delete("id = 1", commit_properties=own_commit(None, target))  # as a wrong commit of its own
    sink = DeltaSink.at(tmp_path, "p1", tables=tables)
    sink.open(through(1))
    crash_before_the_state_commit(monkeypatch, sink)
    moved = update(ORDERS, {"id": 1, "status": "new", "qty": 1}, {"id": 1, "status": "paid", "qty": 1})
    with pytest.raises(KeyboardInterrupt):
        sink.apply([transaction(2, moved, insert(ITEMS, {"sku": "a", "price": 1.0}))], through(2))
    monkeypatch.undo()

    recovered = DeltaSink.at(tmp_path, "p1", lease_s=0, tables=tables)
    assert recovered.open(through(0)) == through(1)
    assert [stop.table for stop in recovered.stopped_at_open] == ["shop.orders"]
    assert recovered.stopped_at_open[0].reason.startswith(
        f"the batch applying {SOURCE_UUID}:2 implied 1 updated, 0 inserted, 0 deleted, but its MERGE "
        "into the target 0 updated, 1 inserted, 0 deleted"
    )
    assert recovered.members == {"shop.items": ""}
    replay = recovered.apply([transaction(2, moved, insert(ITEMS, {"sku": "a", "price": 1.0}))], through(2))
    assert replay.rows_by_table == {} and replay.stopped == []  # items held it already, orders stopped
    items = DeltaTable(recovered.layout.target("shop", "items")).to_pyarrow_table().to_pylist()
    assert [row["sku"] for row in items] == ["a"]


def test_soft_deletes_are_checked_by_bounds_against_real_tombstones(tmp_path: Path) -> None:
    """delta-rs's own counts with tombstones in the target: a re-inserted key meets its tombstone
    (an update), insert-then-delete leaves a tombstone, a key move tombstones the old key; all within the
    bounds. A live row gone behind the pipeline's back, with no tombstone to stand in, is not."""

    def row(key: int, status: str) -> dict:
        return {"id": key, "status": status, "qty": key}

    sink = DeltaSink.at(tmp_path, "p1", soft_deletes=True, tables=("shop.orders",))
    sink.open(through(0))
    batches = [
        [transaction(1, *(insert(ORDERS, row(key, "a")) for key in (1, 2, 3)))],
        [transaction(2, delete(ORDERS, row(1, "a")), update(ORDERS, row(2, "a"), row(2, "b")))],
        [
            transaction(3, insert(ORDERS, row(1, "c"))),  # its tombstone is there: an update
            transaction(4, insert(ORDERS, row(4, "a")), delete(ORDERS, row(4, "a"))),  # a tombstone
            transaction(5, update(ORDERS, row(2, "b"), row(7, "b"))),  # 2 tombstoned, 7 inserted
            transaction(6, delete(ORDERS, row(1, "c")), insert(ORDERS, row(1, "d"))),  # an update
        ],
    ]
    for number, batch in zip((1, 2, 6), batches, strict=True):
        assert sink.apply(batch, through(number)).stopped == []
    sink.release()
    rows = DeltaTable(sink.layout.target("shop", "orders")).to_pyarrow_table().to_pylist()
    assert {row["id"]: (row["status"], row["_cdc_deleted"]) for row in rows} == {
        1: ("d", False), 2: ("b", True), 3: ("a", False), 4: ("a", True), 7: ("b", False)
    }  # fmt: skip

    target = DeltaTable(sink.layout.target("shop", "orders"))
    target.delete("id = 3", commit_properties=own_commit(None, target))  # as a wrong commit of its own
    later = DeltaSink.at(tmp_path, "p1", soft_deletes=True, tables=("shop.orders",))
    later.open(through(6))
    wrong = later.apply([transaction(7, update(ORDERS, row(3, "a"), row(3, "e")))], through(7))
    assert [stop.reason for stop in wrong.stopped] == [
        f"the batch applying {SOURCE_UUID}:7 implied 1 updated, 0 inserted, 0 deleted "
        "(soft deletes: bounds), but its MERGE into the target 0 updated, 1 inserted, 0 deleted: the "
        "target did not hold the source's rows before this batch (a row written or deleted behind the "
        "pipeline's back, or a MERGE that missed rows), so its lake copy is wrong now"
    ]


def test_a_re_loads_unsettled_stretch_is_checked_by_bounds_then_exactly_again(tmp_path: Path) -> None:
    """A key-range re-load leaves keys changed after the lake's position to the stream: wrong there,
    set whole by their next change. Until the stream passes ``gtid_executed`` as of the re-load the
    table's batches are checked by bounds; after it, exactly."""
    tables = ("shop.orders",)
    first = DeltaSink.at(tmp_path, "p1", tables=tables)
    first.open(through(0))
    rows = [insert(ORDERS, {"id": key, "status": "new", "qty": key}) for key in (1, 2)]
    first.apply([transaction(1, *rows)], through(1))
    first.release()
    target = DeltaTable(first.layout.target("shop", "orders"))
    target.delete("id IN (1, 2)", commit_properties=own_commit(None, target))  # left wrong at 1

    sink = DeltaSink.at(tmp_path, "p1", tables=tables, unsettled={"shop.orders": through(2)})
    sink.open(through(1))
    healed = update(ORDERS, {"id": 1, "status": "new", "qty": 1}, {"id": 1, "status": "paid", "qty": 1})
    assert sink.apply([transaction(2, healed)], through(2)).stopped == []  # within the stretch
    later = update(ORDERS, {"id": 2, "status": "new", "qty": 2}, {"id": 2, "status": "paid", "qty": 2})
    assert [stop.table for stop in sink.apply([transaction(3, later)], through(3)).stopped] == ["shop.orders"]
