"""Change tables: the last change per key wins, across parts and replays, like applying one by one."""

from __future__ import annotations

import decimal

from hypothesis import given, settings
from hypothesis import strategies as st
from pymysqlreplication.util.bytes import parse_decimal_from_bytes

from airflow_mysql_cdc.engine.binlog.changes import Op, RowChange, TableShape, Transaction
from airflow_mysql_cdc.engine.binlog.decoding.packed_decimal import decimal_size, packed_decimal_reader
from airflow_mysql_cdc.engine.lake.change_table import (
    ACTION_COLUMN,
    build_change_tables,
    change_tables_from_ipc,
    change_tables_to_ipc,
    changelog_rows,
    concat_change_tables,
    final_actions,
    without_gtids,
)
from airflow_mysql_cdc.engine.lake.delta_layout import GTID_COLUMN, changelog_schema
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
SHAPE = TableShape("db", "t", (ColumnType("id", "int", bits=32), ColumnType("v", "text")), ("id",))

# One step of a workload on keys 0-3: (kind, key, new key for updates).
steps = st.lists(
    st.tuples(st.sampled_from(["write", "delete", "move"]), st.integers(0, 3), st.integers(0, 3)),
    max_size=40,
)


def transactions_and_model(workload: list[tuple[str, int, int]]) -> tuple[list[Transaction], dict]:
    """Transactions of valid changes (one per step), and the final table by applying them in order."""
    table: dict[int, str] = {}
    final: dict[int, tuple[str, str]] = {}  # key -> (action, value) the MERGE must apply
    transactions = []
    for number, (kind, key, new_key) in enumerate(workload, start=1):
        value = f"v{number}"
        if kind == "write" or (kind == "move" and key not in table):
            op = Op.UPDATE if key in table else Op.INSERT
            change = RowChange(SHAPE, op, {"id": key, "v": table[key]} if key in table else None,
                               {"id": key, "v": value}, (key,))  # fmt: skip
            table[key] = value
            final[key] = ("upsert", value)
        elif kind == "delete":
            if key not in table:
                continue
            change = RowChange(SHAPE, Op.DELETE, {"id": key, "v": table.pop(key)}, None, (key,))
            final[key] = ("delete", change.before["v"])
        else:  # a key-changing update, onto a free key
            if new_key in table:
                continue
            before = {"id": key, "v": table.pop(key)}
            change = RowChange(SHAPE, Op.UPDATE, before, {"id": new_key, "v": value}, (new_key,))
            table[new_key] = value
            final[key] = ("delete", before["v"])
            final[new_key] = ("upsert", value)
        transactions.append(Transaction(Gtid(UUID, number), number * 1_000_000, [change]))
    return transactions, final


def final_by_key(actions) -> dict:
    return {row["id"]: (row[ACTION_COLUMN], row["v"]) for row in actions.to_pylist()}


@settings(max_examples=200, deadline=None)
@given(workload=steps, cuts=st.lists(st.integers(0, 40), max_size=3))
def test_the_last_change_per_key_wins_in_one_batch_and_across_concatenated_parts(workload, cuts):
    transactions, expected = transactions_and_model(workload)
    if not transactions:
        return
    whole = build_change_tables(transactions)["db.t"]
    assert final_by_key(final_actions(whole)) == expected
    bounds = [0, *sorted(cut for cut in cuts if cut < len(transactions)), len(transactions)]
    parts = [build_change_tables(transactions[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]
    shipped = [change_tables_from_ipc(change_tables_to_ipc(part)) for part in parts]
    combined = concat_change_tables(shipped)["db.t"]
    assert final_by_key(final_actions(combined)) == expected
    # the changelog has every change once, in order, and no old-key deletes
    changelog = changelog_rows(combined, changelog_schema(SHAPE.columns))
    assert changelog.num_rows == len(transactions) == combined.change_count
    assert changelog[GTID_COLUMN].to_pylist() == [str(t.gtid) for t in transactions]


@settings(max_examples=100, deadline=None)
@given(workload=steps, replayed=st.integers(0, 40))
def test_a_replayed_prefix_is_left_out_and_the_rest_still_wins_per_key(workload, replayed):
    transactions, _ = transactions_and_model(workload)
    if not transactions:
        return
    skipped = transactions[:replayed]
    rest = without_gtids(build_change_tables(transactions)["db.t"], GtidSet.of(t.gtid for t in skipped))
    reference = build_change_tables(transactions[replayed:]).get("db.t")
    assert rest.change_count == len(transactions[replayed:])
    if reference is not None:
        assert final_by_key(final_actions(rest)) == final_by_key(final_actions(reference))
        assert rest.extra_rows == reference.extra_rows


def pack_decimal(precision: int, scale: int, negative: bool, digits: str) -> bytes:
    """MySQL's decimal2bin for a value whose digits (integral then scale ones) are given."""
    integral = precision - scale
    whole, fraction = digits[:integral], digits[integral:]
    group_bytes = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
    out = b""
    lead = integral % 9
    if lead:
        out += int(whole[:lead]).to_bytes(group_bytes[lead], "big")
    for i in range(lead, integral, 9):
        out += int(whole[i : i + 9]).to_bytes(4, "big")
    for i in range(0, scale - scale % 9, 9):
        out += int(fraction[i : i + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(fraction[scale - scale % 9 :]).to_bytes(group_bytes[scale % 9], "big")
    value = int.from_bytes(out, "big") | (1 << (8 * len(out) - 1))
    if negative:
        value = ~value & ((1 << (8 * len(out))) - 1)
    return value.to_bytes(len(out), "big")


@st.composite
def packed_decimals(draw):
    precision = draw(st.integers(1, 65))
    scale = draw(st.integers(0, min(30, precision)))
    digits = draw(st.text("0123456789", min_size=precision, max_size=precision))
    return precision, scale, draw(st.booleans()), digits


@settings(max_examples=500, deadline=None)
@given(packed_decimals())
def test_packed_decimals_read_as_the_library_reads_them(case):
    precision, scale, negative, digits = case
    raw = pack_decimal(precision, scale, negative, digits)
    assert len(raw) == decimal_size(precision, scale)
    ours = packed_decimal_reader(precision, scale)(b"xx" + raw, 2)
    library = parse_decimal_from_bytes(raw, precision, scale)
    assert ours == library and str(ours) == str(library) and ours.as_tuple() == library.as_tuple()
    assert isinstance(ours, decimal.Decimal)
