"""A chunk's SELECT can see a transaction its high watermark lacks; the lake's check must not stop on it.

MySQL commits a group of transactions in the storage engine before it adds their GTIDs to
``gtid_executed``, so a snapshot window's rows can already hold a transaction ``H`` does not name
(:mod:`airflow_mysql_cdc.engine.snapshot.window`, point 3). The stream applies it again (harmless),
and the per-batch check must then count that key's past as unknown: a DELETE whose row the chunk
already lacks is not a row lost behind the pipeline's back. A change that committed after the
``H`` read (by the server's clock, plus the slack) cannot be in the chunk and is still checked
exactly, so a row really lost is still caught.

The workloads are random; the chunk sees the transactions up to ``seen``, its watermark names those
up to ``named`` (``named <= seen``: the race), and the target is what the chunk read. The MERGE is
the reference MERGE of ``tests/unit/test_batch_check.py`` over the batch the filter leaves.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_mysql_cdc.engine.binlog.changes import Op, RowChange, Transaction
from airflow_mysql_cdc.engine.lake.batch_check import MergeExpectation, judge_merge
from airflow_mysql_cdc.engine.lake.change_table import (
    build_change_tables,
    change_tables_from_ipc,
    change_tables_to_ipc,
    concat_change_tables,
)
from airflow_mysql_cdc.engine.lake.change_waves import WaveTable
from airflow_mysql_cdc.engine.lake.state.snapshot_records import ChunkBounds, ChunkDone, record_from_json
from airflow_mysql_cdc.engine.mysql.schema import Column
from airflow_mysql_cdc.engine.snapshot.change_filter import (
    CLOCK_SLACK_US,
    SnapshotChangeFilter,
    SnapshottedChunk,
    TableChunkIndex,
)
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.key_order import KeyOrder
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet
from tests.unit.test_batch_check import KEYS, SHAPE, UUID, keys_after, reference_merge, row, steps, workload

SECOND = 1_000_000
"""``workload`` commits transaction n at n seconds."""
KEY_COLUMNS = (Column("id", "int", "int", False),)


def chunk_filter(named: int, read_us: int | None, *, split_at: int | None = None) -> SnapshotChangeFilter:
    """The filter of a snapshot whose chunks' watermarks name transactions 1..``named``, read at
    ``read_us``: one chunk, or two split after key ``split_at`` (the second read a second later)."""
    high = GtidSet.parse(f"{UUID}:1-{named}") if named else GtidSet()
    if split_at is None:
        chunks = [SnapshottedChunk(Chunk(0, None, None), high, read_us)]
    else:
        later = None if read_us is None else read_us + SECOND
        chunks = [
            SnapshottedChunk(Chunk(0, None, (split_at,)), high, read_us),
            SnapshottedChunk(Chunk(1, (split_at,), None), high, later),
        ]
    # Integer keys sort without asking MySQL for collation weights: no connection needed.
    return SnapshotChangeFilter({"db.t": TableChunkIndex(chunks, ("id",), KeyOrder(None, KEY_COLUMNS))})


def source_after(source: set[int], transactions: list[Transaction]) -> dict[int, int]:
    """The keys the source holds after ``transactions`` (one row each), as the reference MERGE counts them."""
    return dict.fromkeys(keys_after(source, transactions), 1)


def checked(transactions: list[Transaction], change_filter: SnapshotChangeFilter, target: dict[int, int]):
    """The check's verdict on the stream's batch (None: admitted), and the batch's expectation."""
    kept = [change_filter.filter(transaction) for transaction in transactions]
    tables = build_change_tables(kept)
    if "db.t" not in tables:
        return None, MergeExpectation()
    changes = tables["db.t"]
    expected = changes.expected_merge()
    metrics = reference_merge(target, changes.target_rows().to_pylist(), soft_deletes=False)
    return judge_merge("db.t", "the batch", expected, metrics, False), expected


@settings(max_examples=300, deadline=None)
@given(source=st.sets(st.sampled_from(KEYS)), plan=steps, data=st.data())
def test_a_chunk_that_saw_transactions_its_watermark_lacks_passes_the_check(source, plan, data):
    transactions = workload(source, plan)
    if not transactions:
        return
    named = data.draw(st.integers(0, len(transactions)))
    seen = data.draw(st.integers(named, min(named + 3, len(transactions))))
    target = source_after(source, transactions[:seen])  # what the chunk's SELECT read
    # Every transaction the SELECT saw committed, by the server's clock, before the H read.
    high_read_us = transactions[seen - 1].commit_timestamp_us if seen else 0
    split_at = data.draw(st.none() | st.sampled_from(KEYS))  # a second chunk, read a second later
    verdict, _ = checked(transactions, chunk_filter(named, high_read_us, split_at=split_at), target)
    assert verdict is None


@settings(max_examples=300, deadline=None)
@given(source=st.sets(st.sampled_from(KEYS)), plan=steps, data=st.data())
def test_a_row_lost_once_the_chunk_settled_still_stops_the_table(source, plan, data):
    """The batches after the stretch a chunk may hold are checked exactly: a lost or extra row stops."""
    transactions = workload(source, plan)
    named = data.draw(st.integers(0, len(transactions)))
    high_read_us = transactions[named - 1].commit_timestamp_us if named else 0
    settled = [t for t in transactions if t.commit_timestamp_us > high_read_us + CLOCK_SLACK_US]
    images = [image for t in settled for c in t.changes for image in (c.before, c.after) if image]
    touched = sorted({image["id"] for image in images})
    if not touched:
        return
    key = data.draw(st.sampled_from(touched))
    target = source_after(source, transactions[: len(transactions) - len(settled)])
    if key in target:
        target.pop(key)  # deleted behind the pipeline's back
    else:
        target[key] = 1  # written behind its back
    verdict, expected = checked(settled, chunk_filter(named, high_read_us), target)
    assert expected.unknown_upserts == expected.unknown_deletes == 0
    assert verdict is not None
    assert "implied" in verdict.message()


def delete(key: int, number: int) -> Transaction:
    change = RowChange(SHAPE, Op.DELETE, row(key), None, (key,))
    return Transaction(Gtid(UUID, number), number * SECOND, (change,))


def test_a_delete_the_chunk_saw_before_its_watermark_named_it_is_an_unknown_past() -> None:
    # Transactions 1-4 named by H (read at 5 s); the DELETE (transaction 5, committed at 5 s) was
    # seen by the SELECT but not named: the chunk has no key 3, the MERGE deletes nothing.
    verdict, expected = checked([delete(3, 5)], chunk_filter(4, 5 * SECOND), target={1: 1})
    assert expected == MergeExpectation(unknown_deletes=1)
    assert verdict is None


def test_a_delete_committed_after_the_read_and_the_slack_that_finds_no_row_stops_the_table() -> None:
    late = 5 * SECOND + CLOCK_SLACK_US + SECOND
    verdict, expected = checked([delete(3, late // SECOND)], chunk_filter(4, 5 * SECOND), target={1: 1})
    assert expected == MergeExpectation(existed_deletes=1)
    assert verdict is not None
    assert "implied 0 updated, 0 inserted, 1 deleted" in verdict.message()
    assert "0 updated, 0 inserted, 0 deleted: the target did not hold the source's rows" in verdict.message()


def test_chunks_recorded_without_the_read_time_mark_nothing() -> None:
    verdict, expected = checked([delete(3, 5)], chunk_filter(4, None), target={1: 1})
    assert expected == MergeExpectation(existed_deletes=1)
    assert verdict is not None


def test_only_the_part_of_a_key_change_whose_chunk_may_hold_it_is_unknown() -> None:
    # Key 1 (chunk 0, read at 5 s) moves to key 4 (chunk 1, read at 6 s, which named the move).
    change = RowChange(SHAPE, Op.UPDATE, row(1), row(4), (4,))
    move = Transaction(Gtid(UUID, 5), 5 * SECOND, (change,))
    index = chunk_filter(4, 5 * SECOND, split_at=2).indexes["db.t"]
    index.chunks[1] = SnapshottedChunk(index.chunks[1].chunk, GtidSet.parse(f"{UUID}:1-5"), 6 * SECOND)
    kept = SnapshotChangeFilter({"db.t": TableChunkIndex(index.chunks, ("id",), index.order)}).filter(move)
    assert [(c.op, c.primary_key) for c in kept.changes] == [(Op.DELETE, (1,))]
    assert kept.unsettled_changes == frozenset({0})


def test_the_unknown_past_survives_batches_waves_replays_and_shipping(tmp_path) -> None:
    first = [chunk_filter(4, 5 * SECOND).filter(delete(3, 5))]
    second = [chunk_filter(4, 5 * SECOND).filter(delete(2, 20))]
    one, two = build_change_tables(first)["db.t"], build_change_tables(second)["db.t"]
    both = concat_change_tables([{"db.t": one}, {"db.t": two}])["db.t"]
    assert both.expected_merge() == MergeExpectation(existed_deletes=1, unknown_deletes=1)
    shipped = change_tables_from_ipc(change_tables_to_ipc({"db.t": both}))["db.t"]
    assert shipped.expected_merge() == both.expected_merge()
    assert both.without(GtidSet.parse(f"{UUID}:20")).expected_merge() == MergeExpectation(unknown_deletes=1)
    wave = WaveTable(SHAPE, tmp_path)
    wave.add(one)
    wave.add(two)
    assert wave.expected_merge() == MergeExpectation(existed_deletes=1, unknown_deletes=1)


def test_a_chunk_record_keeps_its_read_time_and_old_records_read_without_one() -> None:
    high = GtidSet.parse(f"{UUID}:1-4")
    record = ChunkDone("s1", ChunkBounds(0, None, None), GtidSet(), high, 7, 5 * SECOND)
    assert record_from_json(record.to_json()) == record
    old = record.to_json()
    del old["high_read_us"]
    assert record_from_json(old).high_read_us is None
