"""The Delta sink on real Delta tables: exact results, exactly once, one writer."""

from __future__ import annotations

from pathlib import Path

import polars
import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.lake.delta_sink import DeltaSink
from airflow_mysql_cdc.engine.lake.sink import SinkBehindError, SinkDivergedError
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineBusyError, PipelineFencedError
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.unit.sink_fixtures import (
    ITEMS,
    ORDERS,
    crash_before_the_state_commit,
    delete,
    insert,
    through,
    transaction,
    update,
)


def _rows(path: Path, *columns: str) -> list[tuple]:
    table = DeltaTable(str(path)).to_pyarrow_table(columns=list(columns)).to_pylist()
    return sorted(tuple(row[c] for c in columns) for row in table)


def _first_batch():
    return [
        transaction(
            1, insert(ORDERS, {"id": 1, "status": "new", "qty": 1}), insert(ITEMS, {"sku": "a", "price": 1.5})
        ),
        transaction(2, insert(ORDERS, {"id": 2, "status": "new", "qty": 2})),
        transaction(
            3,
            update(
                ORDERS,
                {"id": 1, "status": "new", "qty": 1},
                {"id": 1, "status": "paid", "qty": 4_000_000_000},
            ),
            delete(ORDERS, {"id": 2, "status": "new", "qty": 2}),
        ),
    ]


def test_batch_is_merged_last_write_wins_and_logged_change_by_change(tmp_path: Path) -> None:
    sink = DeltaSink.at(tmp_path, "p1")
    assert sink.open(through(0)) == through(0)
    result = sink.apply(_first_batch(), through(3))
    assert result.applied_gtids == through(3)
    # Per table: its changelog rows, and the transactions that changed it (the first changed both).
    assert result.rows_by_table == {"shop.orders": 4, "shop.items": 1}
    assert result.transactions_by_table == {"shop.orders": 3, "shop.items": 1}
    target = sink.layout.target("shop", "orders")
    assert _rows(target, "id", "status", "qty") == [(1, "paid", 4_000_000_000)]
    assert _rows(sink.layout.target("shop", "items"), "sku", "price") == [("a", 1.5)]
    changelog = _rows(sink.layout.changelog("shop", "orders"), "_cdc_gtid", "_cdc_seq", "_cdc_op", "id")
    assert [(gtid.rsplit(":", 1)[1], seq, op, key) for gtid, seq, op, key in changelog] == [
        ("1", 0, "insert", 1),
        ("2", 0, "insert", 2),
        ("3", 0, "update", 1),
        ("3", 1, "delete", 2),
    ]
    commit = DeltaTable(str(target)).history(1)[0]
    assert commit["airflow_mysql_cdc.applied_gtids"] == str(through(3))
    assert DeltaTable(str(target)).transaction_version("airflow_mysql_cdc:p1") == result.batch_seq


def test_key_changing_update_then_reuse_of_old_key(tmp_path: Path) -> None:
    sink = DeltaSink.at(tmp_path, "p1")
    sink.open(through(0))
    sink.apply([transaction(1, insert(ORDERS, {"id": 1, "status": "a", "qty": 1}))], through(1))
    sink.apply(
        [
            transaction(
                2, update(ORDERS, {"id": 1, "status": "a", "qty": 1}, {"id": 5, "status": "a", "qty": 1})
            ),
            transaction(3, insert(ORDERS, {"id": 1, "status": "b", "qty": 2})),
        ],
        through(3),
    )
    assert _rows(sink.layout.target("shop", "orders"), "id", "status") == [(1, "b"), (5, "a")]


def test_soft_deletes_keep_the_row_flagged_with_its_delete_time(tmp_path: Path) -> None:
    sink = DeltaSink.at(tmp_path, "p1", soft_deletes=True)
    sink.open(through(0))
    sink.apply(_first_batch()[:2], through(2))
    sink.apply(_first_batch()[2:], through(3))
    rows = DeltaTable(str(sink.layout.target("shop", "orders"))).to_pyarrow_table().to_pylist()
    by_id = {row["id"]: row for row in rows}
    assert by_id[1]["_cdc_deleted"] is False and by_id[1]["_cdc_deleted_at"] is None
    assert by_id[2]["_cdc_deleted"] is True and by_id[2]["_cdc_deleted_at"] == by_id[2]["_cdc_commit_ts"]


def test_reopening_resumes_from_the_sink_and_a_replayed_segment_applies_nothing(tmp_path: Path) -> None:
    first = DeltaSink.at(tmp_path, "p1")
    first.open(through(0))
    first.apply(_first_batch(), through(3))
    first.release()
    versions = DeltaTable(str(first.layout.target("shop", "orders"))).version()
    second = DeltaSink.at(tmp_path, "p1")
    assert second.open(through(1)) == through(3)  # the start is behind the sink: resume from the sink
    assert DeltaTable(str(first.layout.target("shop", "orders"))).version() == versions


def test_start_the_sink_never_reached_is_refused_as_a_gap(tmp_path: Path) -> None:
    sink = DeltaSink.at(tmp_path, "p1")
    sink.open(through(0))
    sink.apply(_first_batch()[:1], through(1))
    with pytest.raises(SinkBehindError, match="never reached the lake"):
        DeltaSink.at(tmp_path, "p1").open(through(3))
    with pytest.raises(SinkDivergedError, match="diverge"):
        elsewhere = GtidSet.parse("4e11fa47-71ca-11e1-9e33-c80aa9429562:1")
        DeltaSink.at(tmp_path, "p1").open(through(0) | elsewhere)


def test_crash_between_table_commits_replays_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = DeltaSink.at(tmp_path, "p1")
    sink.open(through(0))
    crash_before_the_state_commit(monkeypatch, sink)
    with pytest.raises(KeyboardInterrupt):
        sink.apply(_first_batch(), through(3))
    monkeypatch.undo()

    # The crashed writer lives on in this process, so its lease looks alive: take over explicitly.
    recovered = DeltaSink.at(tmp_path, "p1", lease_s=0)
    assert recovered.open(through(0)) == through(0)
    recovered.apply(_first_batch(), through(3))
    recovered.apply([transaction(4, insert(ORDERS, {"id": 9, "status": "x", "qty": 0}))], through(4))
    assert _rows(recovered.layout.target("shop", "orders"), "id", "status") == [(1, "paid"), (9, "x")]
    changelog = _rows(recovered.layout.changelog("shop", "orders"), "_cdc_gtid", "_cdc_seq")
    assert len(changelog) == len(set(changelog)) == 5


@pytest.mark.parametrize(
    "start",
    [through(0), GtidSet.parse("4e11fa47-71ca-11e1-9e33-c80aa9429562:1-7")],
    ids=["empty start", "start from another server's history"],
)
def test_a_first_batch_cut_short_by_a_crash_resumes_with_its_tables_loaded_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: GtidSet
) -> None:
    """The very first batch's tables committed, the state never did (a kill -9): the state holds batch
    0 and the batch's intent. The next open, which loads its tables at once, must keep that intent
    (CI caught an open that reset a batch-0 state and with it the intent: every later open refused
    the lake)."""
    tables = ["shop.orders", "shop.items"]
    sink = DeltaSink.at(tmp_path, "p1", tables=tables)
    sink.open(start)
    crash_before_the_state_commit(monkeypatch, sink)
    with pytest.raises(KeyboardInterrupt):
        sink.apply(_first_batch(), start | through(3))
    monkeypatch.undo()
    # A start past what the lake holds is a gap here too, not a fresh pipeline to reset.
    with pytest.raises(SinkBehindError, match="never reached the lake"):
        DeltaSink.at(tmp_path, "p1", lease_s=0, tables=tables).open(start | through(5))

    for attempt in range(2):  # the retry itself may die before its first batch: open twice
        recovered = DeltaSink.at(tmp_path, "p1", lease_s=0, tables=tables)
        assert recovered.open(start) == start
        assert recovered._state.intents == {1: start | through(3)}, attempt
    recovered.apply(_first_batch(), start | through(3))
    assert _rows(recovered.layout.target("shop", "orders"), "id", "status") == [(1, "paid")]
    changelog = _rows(recovered.layout.changelog("shop", "orders"), "_cdc_gtid", "_cdc_seq")
    assert len(changelog) == len(set(changelog)) == 4


def test_a_rebase_over_a_batch_cut_short_keeps_its_number_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebase drops the pending intents with the old position; the tables that carry the cut-short
    batch's number must still open afterwards, and no later batch may reuse that number."""
    tables = ["shop.orders", "shop.items"]
    sink = DeltaSink.at(tmp_path, "p1", tables=tables)
    sink.open(through(0))
    sink.apply(_first_batch()[:1], through(1))
    crash_before_the_state_commit(monkeypatch, sink)
    with pytest.raises(KeyboardInterrupt):
        sink.apply(_first_batch()[1:], through(3))
    monkeypatch.undo()

    rebased = DeltaSink.at(tmp_path, "p1", lease_s=0, tables=tables)
    assert rebased.open(through(5), rebase=True, keep_members=True) == through(5)
    assert (rebased._state.batch_seq, rebased._state.intents) == (2, {})
    rebased.apply([transaction(6, insert(ORDERS, {"id": 9, "status": "x", "qty": 0}))], through(6))
    rebased.release()
    again = DeltaSink.at(tmp_path, "p1", tables=tables)
    assert again.open(through(6)) == through(6)
    target = DeltaTable(str(again.layout.target("shop", "orders")))
    assert target.transaction_version("airflow_mysql_cdc:p1") == 3


def test_second_instance_refuses_to_start_while_the_first_holds_the_lease(tmp_path: Path) -> None:
    first = DeltaSink.at(tmp_path, "p1", owner="host-a:1:first")
    first.open(through(0))
    first.apply(_first_batch()[:1], through(1))
    with pytest.raises(PipelineBusyError, match="is being written by host-a:1:first"):
        DeltaSink.at(tmp_path, "p1", owner="host-b:2:second").open(through(1))
    first.apply(_first_batch()[1:], through(3))  # the first instance goes on undisturbed
    first.release()
    DeltaSink.at(tmp_path, "p1", owner="host-b:2:second").open(through(3))


def test_instance_that_outlived_its_lease_is_fenced_by_its_successor(tmp_path: Path) -> None:
    first = DeltaSink.at(tmp_path, "p1", owner="host-a:1:first")
    first.open(through(0))
    first.apply(_first_batch()[:1], through(1))
    second = DeltaSink.at(tmp_path, "p1", owner="host-b:2:second", lease_s=0)  # the lease has run out
    second.open(through(1))
    with pytest.raises(PipelineFencedError, match="owner host-b:2:second"):
        first.apply(_first_batch()[1:], through(3))
    second.apply(_first_batch()[1:], through(3))
    assert _rows(second.layout.target("shop", "orders"), "id", "status") == [(1, "paid")]


def test_lake_tables_are_ordinary_delta_tables_for_other_readers(tmp_path: Path) -> None:
    sink = DeltaSink.at(tmp_path, "p1")
    sink.open(through(0))
    sink.apply(_first_batch(), through(3))
    frame = polars.read_delta(str(sink.layout.target("shop", "orders")))
    assert frame.select("id", "status").rows() == [(1, "paid")]
    changelog = polars.read_delta(str(sink.layout.changelog("shop", "orders")))
    assert changelog.height == 4
    assert set(changelog["_cdc_commit_date"].cast(str)) == {"2026-09-21"}
