"""The rule every batch checks itself by: what its MERGE must report, against a reference MERGE.

The reference applies a batch's last row per key to an in-memory target the way the sink's MERGE
does (match by key; update or delete a match; insert an unmatched upsert; with soft deletes a
delete updates the match into a tombstone), and counts what it did. On a target that equals the
source before the batch, the rule must admit those counts in both modes; on a target that lost a
row the batch then touches (or holds one it should not), it must not (hard deletes: always).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_mysql_cdc.engine.binlog.changes import Op, RowChange, TableShape, Transaction
from airflow_mysql_cdc.engine.lake.batch_check import MergeExpectation, expected_counts, judge_merge
from airflow_mysql_cdc.engine.lake.change_table import ACTION_COLUMN, build_change_tables
from airflow_mysql_cdc.engine.lake.change_waves import WaveTable
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
SHAPE = TableShape("db", "t", (ColumnType("id", "int", bits=32), ColumnType("v", "text")), ("id",))
KEYS = range(6)

steps = st.lists(
    st.tuples(st.sampled_from(["write", "delete", "move"]), st.sampled_from(KEYS), st.sampled_from(KEYS)),
    min_size=1,
    max_size=30,
)
before = st.sets(st.sampled_from(KEYS))
tombstones = st.sets(st.sampled_from(KEYS))


def workload(source: set[int], plan: list[tuple[str, int, int]]) -> list[Transaction]:
    """Valid changes of a source table holding ``source``'s keys: one transaction per step."""
    table = {key: f"old{key}" for key in source}
    transactions = []
    for number, (kind, key, other) in enumerate(plan, start=1):
        value = f"v{number}"
        if kind == "write" or (kind == "move" and key not in table):
            old = table.get(key)
            op = Op.UPDATE if old is not None else Op.INSERT
            change = RowChange(SHAPE, op, {"id": key, "v": old} if old is not None else None,
                               {"id": key, "v": value}, (key,))  # fmt: skip
            table[key] = value
        elif kind == "delete":
            if key not in table:
                continue
            change = RowChange(SHAPE, Op.DELETE, {"id": key, "v": table.pop(key)}, None, (key,))
        else:  # a key-changing update onto a free key
            if other in table:
                continue
            change = RowChange(SHAPE, Op.UPDATE, {"id": key, "v": table.pop(key)}, {"id": other, "v": value},
                               (other,))  # fmt: skip
            table[other] = value
        transactions.append(Transaction(Gtid(UUID, number), number * 1_000_000, (change,)))
    return transactions


def reference_merge(target: dict[int, int], final_rows: list[dict], soft_deletes: bool) -> dict[str, int]:
    """``target``: key -> how many rows of it the target holds. Returns delta-rs's metric names."""
    counts = {"num_target_rows_updated": 0, "num_target_rows_inserted": 0, "num_target_rows_deleted": 0}
    for row in final_rows:
        matched = target.get(row["id"], 0)
        if matched and (soft_deletes or row[ACTION_COLUMN] == "upsert"):
            counts["num_target_rows_updated"] += matched
        elif matched:
            counts["num_target_rows_deleted"] += matched
        elif row[ACTION_COLUMN] == "upsert" or soft_deletes:  # a soft delete inserts its tombstone
            counts["num_target_rows_inserted"] += 1
    return counts


def judged(transactions: list[Transaction], target: dict[int, int], soft_deletes: bool):
    changes = build_change_tables(transactions)["db.t"]
    metrics = reference_merge(target, changes.target_rows().to_pylist(), soft_deletes)
    return judge_merge("db.t", "the batch", changes.expected_merge(), metrics, soft_deletes)


@settings(max_examples=300, deadline=None)
@given(source=before, plan=steps, dead=tombstones)
def test_a_target_equal_to_the_source_meets_the_rule_in_both_modes(source, plan, dead):
    transactions = workload(source, plan)
    if not transactions:
        return
    assert judged(transactions, dict.fromkeys(source, 1), soft_deletes=False) is None
    # Soft deletes: any key the source lacks may have a tombstone from an earlier batch.
    with_tombstones = dict.fromkeys(source | dead, 1)
    assert judged(transactions, with_tombstones, soft_deletes=True) is None


@settings(max_examples=300, deadline=None)
@given(source=before, plan=steps, data=st.data())
def test_a_target_that_lost_a_row_or_holds_one_too_many_fails_the_rule_with_hard_deletes(source, plan, data):
    transactions = workload(source, plan)
    touched = {image["id"] for t in transactions for c in t.changes for image in (c.before, c.after) if image}
    if not touched:
        return
    key = data.draw(st.sampled_from(sorted(touched)))
    target = dict.fromkeys(source, 1)
    if key in source:
        target.pop(key)  # deleted behind the pipeline's back
    else:
        target[key] = 1  # written behind its back
    difference = judged(transactions, target, soft_deletes=False)
    assert difference is not None
    assert "db.t: the batch applying the batch implied" in difference.message()


def expectation(*changes: RowChange) -> MergeExpectation:
    transactions = [Transaction(Gtid(UUID, n), n, (change,)) for n, change in enumerate(changes, start=1)]
    return build_change_tables(transactions)["db.t"].expected_merge()


def row(key: int, value: str = "x") -> dict:
    return {"id": key, "v": value}


INSERT_3 = RowChange(SHAPE, Op.INSERT, None, row(3), (3,))
DELETE_3 = RowChange(SHAPE, Op.DELETE, row(3), None, (3,))


def test_a_key_changing_update_deletes_an_existing_key_and_inserts_a_new_one() -> None:
    moved = expectation(RowChange(SHAPE, Op.UPDATE, row(1), row(2), (2,)))
    assert moved == MergeExpectation(existed_deletes=1, new_upserts=1)
    # Moved away and back: key 1 existed (its first change is the move's delete) and exists after.
    back = expectation(
        RowChange(SHAPE, Op.UPDATE, row(1), row(2), (2,)), RowChange(SHAPE, Op.UPDATE, row(2), row(1), (1,))
    )
    assert back == MergeExpectation(existed_upserts=1, new_deletes=1)


def test_delete_then_insert_is_an_update_and_insert_then_delete_is_nothing() -> None:
    reinserted = expectation(RowChange(SHAPE, Op.DELETE, row(1), None, (1,)),
                             RowChange(SHAPE, Op.INSERT, None, row(1, "y"), (1,)))  # fmt: skip
    assert reinserted == MergeExpectation(existed_upserts=1)
    assert expected_counts(reinserted, soft_deletes=False).describe() == "1 updated, 0 inserted, 0 deleted"
    gone = expectation(INSERT_3, DELETE_3)
    assert gone == MergeExpectation(new_deletes=1)
    assert expected_counts(gone, soft_deletes=False).describe() == "0 updated, 0 inserted, 0 deleted"


def test_soft_deletes_check_bounds_a_tombstone_can_stand_in_for() -> None:
    # An insert of a key deleted in an earlier batch meets its tombstone (an update) or not (an insert).
    inserted = expectation(RowChange(SHAPE, Op.INSERT, None, row(1), (1,)))
    counts = expected_counts(inserted, soft_deletes=True)
    assert counts.describe() == "0 to 1 updated, 0 to 1 inserted, 0 deleted, 1 updated or inserted"
    for metrics in ({"num_target_rows_updated": 1}, {"num_target_rows_inserted": 1}):
        assert judge_merge("db.t", "g", inserted, metrics, soft_deletes=True) is None
    # A delete is an update into a tombstone; a delete reported, or nothing met, is wrong.
    deleted = expectation(RowChange(SHAPE, Op.DELETE, row(2), None, (2,)))
    assert judge_merge("db.t", "g", deleted, {"num_target_rows_updated": 1}, soft_deletes=True) is None
    for wrong in ({"num_target_rows_deleted": 1}, {}):
        assert judge_merge("db.t", "g", deleted, wrong, soft_deletes=True) is not None
    # Insert-then-delete of a new key: its tombstone inserted, or an earlier one rewritten; not nothing.
    gone = expectation(INSERT_3, DELETE_3)
    for metrics in ({"num_target_rows_inserted": 1}, {"num_target_rows_updated": 1}):
        assert judge_merge("db.t", "g", gone, metrics, soft_deletes=True) is None
    assert judge_merge("db.t", "g", gone, {}, soft_deletes=True) is not None


def test_the_message_names_the_table_the_gtids_the_counts_and_the_way_out() -> None:
    updated = expectation(RowChange(SHAPE, Op.UPDATE, row(1), row(1, "y"), (1,)))
    difference = judge_merge("db.t", f"{UUID}:7-9", updated, {"num_target_rows_inserted": 1}, False)
    assert difference is not None
    assert difference.message() == (
        f"db.t: the batch applying {UUID}:7-9 implied 1 updated, 0 inserted, 0 deleted, but its MERGE "
        "into the target 0 updated, 1 inserted, 0 deleted: the target did not hold the source's rows "
        "before this batch (a row written or deleted behind the pipeline's back, or a MERGE that missed "
        "rows), so its lake copy is wrong now. The pipeline stopped streaming it (the other tables go on) "
        'until it is snapshotted again: re-snapshot the table (docs/operations.md, "A table stopped"). '
        "Only this pipeline may write its Delta tables: find out who else did first."
    )


@settings(max_examples=100, deadline=None)
@given(source=before, plan=steps, cuts=st.lists(st.integers(0, 30), max_size=3))
def test_a_wave_expects_what_one_batch_of_all_its_parts_would(tmp_path_factory, source, plan, cuts):
    transactions = workload(source, plan)
    if not transactions:
        return
    bounds = [0, *sorted(cut for cut in cuts if cut < len(transactions)), len(transactions)]
    wave = WaveTable(SHAPE, Path(tmp_path_factory.mktemp("wave")))
    for first, last in zip(bounds, bounds[1:], strict=False):
        part = build_change_tables(transactions[first:last]).get("db.t")
        if part is not None:
            wave.add(part)
    assert wave.expected_merge() == build_change_tables(transactions)["db.t"].expected_merge()


@settings(max_examples=100, deadline=None)
@given(source=before, plan=steps, replayed=st.integers(1, 30))
def test_a_replayed_wave_checks_keys_whose_first_change_was_left_out_as_unknown(
    tmp_path_factory, source, plan, replayed
):
    """The table holds the replayed prefix already: the rest must still meet the rule (as bounds)."""
    transactions = workload(source, plan)
    if len(transactions) <= replayed:
        return
    wave = WaveTable(SHAPE, Path(tmp_path_factory.mktemp("wave")))
    wave.add(build_change_tables(transactions)["db.t"])
    rest = wave.without(GtidSet.of(t.gtid for t in transactions[:replayed]))
    after_prefix = dict.fromkeys(keys_after(source, transactions[:replayed]), 1)
    metrics = reference_merge(after_prefix, rest.target_rows().to_pylist(), soft_deletes=False)
    assert judge_merge("db.t", "g", rest.expected_merge(), metrics, soft_deletes=False) is None


def keys_after(source: set[int], transactions: list[Transaction]) -> set[int]:
    """The keys a source holding ``source`` holds after ``transactions``."""
    keys = set(source)
    for transaction in transactions:
        for change in transaction.changes:
            if change.before is not None:
                keys.discard(change.before["id"])
            if change.after is not None:
                keys.add(change.after["id"])
    return keys
