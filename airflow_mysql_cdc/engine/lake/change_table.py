"""A micro-batch of one table's row changes as one Arrow table, and the final action per row key.

Invariant: applying :func:`final_actions` of a change table to a table that reflects every change
before the batch gives the same table as applying the batch's changes one by one. It holds because,
per key, only the last change decides the final row (last write wins, as Spirit's buffered map
does): an insert or update leaves the row with its after image, a delete leaves no row. A
primary-key-changing update is a delete of the old key followed by an upsert of the new one, each
judged as its own key, so a row that moves and a row that later takes its old key both end up right
(``test_key_changing_update_then_reuse_of_old_key``). The changelog keeps every change, in order,
with its position inside its transaction.

The same aggregation also finds each key's *first* change (a ``min`` beside the ``max``), which
says whether the key existed before the batch: what the target MERGE's own counts must then be
(:mod:`.batch_check`, the check every batch makes of itself) costs nothing more than that.

Why columnar: the sink used to keep one Python object per change and per final action, and turn the
changelog and the target rows into Arrow separately; that was 11 µs per change, a third of the
single reader's time once decoding got fast (docs/benchmarks.md). Here each image is converted to
Arrow once; the last change per key is a hash aggregation over the key columns. A change table is
also what a parallel range reader ships back to the driver (as Arrow IPC), so the conversion runs
in the range readers, beside each other, instead of on the driver.

Layout of :attr:`ChangeTable.rows`, in binlog order: the source columns (Delta-typed), then
``_cdc_op``, ``_cdc_gtid``, ``_cdc_commit_ts``, ``_cdc_seq`` and ``_cdc_action`` (``upsert`` or
``delete``). A key-changing update contributes two rows: the delete of its old key (its before
image, ``_cdc_op`` = ``update``, not part of the changelog) and then its after image. Their
positions are kept in :attr:`ChangeTable.extra_rows`; the positions of changes a snapshot chunk may
already hold (``Transaction.unsettled_changes``) in :attr:`ChangeTable.unsettled_rows`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from airflow_mysql_cdc.engine.binlog.changes import Op, TableShape, Transaction
from airflow_mysql_cdc.engine.lake.batch_check import MergeExpectation
from airflow_mysql_cdc.engine.lake.delta_layout import (
    COMMIT_DATE_COLUMN,
    COMMIT_TS_COLUMN,
    GTID_COLUMN,
    OP_COLUMN,
    SEQUENCE_COLUMN,
    to_delta_array,
)
from airflow_mysql_cdc.engine.mysql.types import to_arrow_array
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject

ACTION_COLUMN = "_cdc_action"
EXISTED_COLUMN = "_cdc_existed"
"""Of a key's first change in a batch: whether the key existed just before it (null: unknown).
Computed for the MERGE's check (:mod:`.batch_check`), never written to a table."""
FIRST_GTID_COLUMN = "_cdc_first_gtid"
"""Of a key's first change in a catch-up wave: its transaction (a replay may leave it out)."""
_INTERNAL_COLUMNS = (OP_COLUMN, SEQUENCE_COLUMN, EXISTED_COLUMN, FIRST_GTID_COLUMN)
_ROW_NUMBER = "_cdc_row_number"
_OPS = {Op.INSERT: "insert", Op.UPDATE: "update", Op.DELETE: "delete"}


class TableChanges(Protocol):
    """What the sink takes of one table's changes: a micro-batch (:class:`ChangeTable`) or a whole
    catch-up wave (:class:`~.change_waves.WaveTable`)."""

    shape: TableShape

    @property
    def change_count(self) -> int:
        """Changes that reach the changelog (old-key deletes of key changes not counted)."""
        ...

    @property
    def transaction_count(self) -> int:
        """Transactions that changed the table (distinct ``_cdc_gtid``)."""
        ...

    def without(self, skipped: GtidSet) -> TableChanges:
        """The changes minus those of ``skipped`` transactions (a replay after a crash)."""
        ...

    def target_rows(self) -> pa.Table:
        """The last row per key, with its ``_cdc_action``: what a MERGE into the target applies."""
        ...

    def expected_merge(self) -> MergeExpectation:
        """What the MERGE of :meth:`target_rows` must do (:mod:`.batch_check`); one aggregation
        gives both."""
        ...

    def changelog_tables(self, schema: pa.Schema) -> Iterator[pa.Table]:
        """Every change as changelog rows of ``schema``, in binlog order, a table at a time."""
        ...


@dataclass
class ChangeTable:
    """One table's changes of a micro-batch (see the module docstring for the layout)."""

    shape: TableShape
    rows: pa.Table
    extra_rows: tuple[int, ...] = ()
    """Positions of the old-key deletes of key-changing updates (not changelog rows)."""
    unsettled_rows: tuple[int, ...] = ()
    """Positions of changes a snapshot chunk may already hold: a key whose first change is one of
    them has an unknown past (:func:`existed_before_each`)."""

    @property
    def change_count(self) -> int:
        return self.rows.num_rows - len(self.extra_rows)

    @functools.cached_property
    def transaction_count(self) -> int:
        # Cached: the sink asks for the target's and the changelog's, most often the same table.
        return distinct_transactions(self.rows)

    def without(self, skipped: GtidSet) -> ChangeTable:
        return without_gtids(self, skipped)

    def target_rows(self) -> pa.Table:
        return self._final.rows

    def expected_merge(self) -> MergeExpectation:
        return self._final.expected

    @functools.cached_property
    def _final(self) -> FinalRows:
        return final_rows(self)

    def changelog_tables(self, schema: pa.Schema) -> Iterator[pa.Table]:
        yield changelog_rows(self, schema)


class _Columns:
    """Per-table lists the rows are gathered into before one Arrow conversion per column."""

    __slots__ = (
        "shape", "images", "ops", "gtids", "commit_us", "sequences", "actions", "extra", "unsettled", "key_of"
    )  # fmt: skip

    def __init__(self, shape: TableShape) -> None:
        self.shape = shape
        self.images: list[Mapping[str, Any]] = []
        self.ops: list[str] = []
        self.gtids: list[str] = []
        self.commit_us: list[int] = []
        self.sequences: list[int] = []
        self.actions: list[str] = []
        self.extra: list[int] = []
        self.unsettled: list[int] = []
        key = shape.primary_key
        self.key_of = itemgetter(*key) if key else (lambda image: ())

    def table(self) -> ChangeTable:
        columns = self.shape.columns
        names = [column.name for column in columns]
        if len(names) == 1:
            per_column: list[Sequence[Any]] = [[image[names[0]] for image in self.images]]
        else:
            per_column = list(zip(*map(itemgetter(*names), self.images), strict=True)) or [[] for _ in names]
        data = {
            column.name: to_delta_array(to_arrow_array(column, list(values)))
            for column, values in zip(columns, per_column, strict=True)
        }
        data[OP_COLUMN] = pa.array(self.ops, pa.string())
        data[GTID_COLUMN] = pa.array(self.gtids, pa.string())
        data[COMMIT_TS_COLUMN] = pa.array(self.commit_us, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
        data[SEQUENCE_COLUMN] = pa.array(self.sequences, pa.int32())
        data[ACTION_COLUMN] = pa.array(self.actions, pa.string())
        return ChangeTable(self.shape, pa.table(data), tuple(self.extra), tuple(self.unsettled))


def build_change_tables(transactions: Iterable[Transaction]) -> dict[str, ChangeTable]:
    """Per table (``schema.table``), its changes of these transactions, in binlog order."""
    gathered: dict[str, _Columns] = {}
    for transaction in transactions:
        gtid = str(transaction.gtid)
        commit_us = transaction.commit_timestamp_us
        current_shape = None
        columns: _Columns | None = None
        unsettled = transaction.unsettled_changes
        for sequence, change in enumerate(transaction.changes):
            if change.shape is not current_shape:
                current_shape = change.shape
                name = current_shape.qualified_name
                columns = gathered.get(name)
                if columns is None:
                    columns = gathered[name] = _Columns(current_shape)
            assert columns is not None
            op = change.op
            if op is Op.DELETE:
                image, action = change.before, "delete"
            else:
                image, action = change.after, "upsert"
                assert image is not None  # an insert or an update has an after image
                before = change.before
                if op is Op.UPDATE and before is not None:
                    key_of = columns.key_of
                    if key_of(before) != key_of(image):  # the old key's row goes away first
                        if unsettled and sequence in unsettled:
                            columns.unsettled.append(len(columns.images))
                        columns.extra.append(len(columns.images))
                        _append(columns, before, "update", gtid, commit_us, sequence, "delete")
            if unsettled and sequence in unsettled:
                columns.unsettled.append(len(columns.images))
            _append(columns, image, _OPS[op], gtid, commit_us, sequence, action)
    return {name: columns.table() for name, columns in gathered.items()}


def _append(
    columns: _Columns, image: Any, op: str, gtid: str, commit_us: int, sequence: int, action: str
) -> None:
    columns.images.append(image)
    columns.ops.append(op)
    columns.gtids.append(gtid)
    columns.commit_us.append(commit_us)
    columns.sequences.append(sequence)
    columns.actions.append(action)


def concat_change_tables(parts: Sequence[Mapping[str, ChangeTable]]) -> dict[str, ChangeTable]:
    """Change tables of consecutive stretches of the binlog as one batch, still in binlog order."""
    combined: dict[str, ChangeTable] = {}
    for part in parts:
        for name, table in part.items():
            earlier = combined.get(name)
            if earlier is None:
                combined[name] = table
                continue
            offset = earlier.rows.num_rows
            combined[name] = ChangeTable(
                table.shape,
                pa.concat_tables([earlier.rows, table.rows]),
                earlier.extra_rows + tuple(offset + position for position in table.extra_rows),
                earlier.unsettled_rows + tuple(offset + position for position in table.unsettled_rows),
            )
    return combined


def distinct_transactions(rows: pa.Table) -> int:
    """The number of distinct transactions (``_cdc_gtid``) among ``rows``."""
    return pc.count_distinct(rows[GTID_COLUMN]).as_py() if rows.num_rows else 0


def without_gtids(table: ChangeTable, skipped: GtidSet) -> ChangeTable:
    """The change table minus the changes of ``skipped`` transactions (a replay after a crash)."""
    if not skipped:
        return table
    names = pa.array([str(gtid) for gtid in skipped], pa.string())
    keep = pc.invert(pc.is_in(table.rows[GTID_COLUMN], value_set=names))
    positions = pa.array(range(table.rows.num_rows), pa.int64()).filter(keep).to_pylist()
    renumbered = {old: new for new, old in enumerate(positions)}
    extra = tuple(renumbered[position] for position in table.extra_rows if position in renumbered)
    unsettled = tuple(renumbered[position] for position in table.unsettled_rows if position in renumbered)
    return ChangeTable(table.shape, table.rows.filter(keep), extra, unsettled)


@dataclass(frozen=True)
class FinalRows:
    """What a MERGE into the target applies, and what it must report doing (:mod:`.batch_check`)."""

    rows: pa.Table
    expected: MergeExpectation


def final_actions(table: ChangeTable) -> pa.Table:
    """The last row per key (with its ``_cdc_action``), in key order: what a MERGE into the target
    applies (rows it inserts are written in key order, so new files hold narrow key ranges)."""
    return final_rows(table).rows


def final_rows(table: ChangeTable) -> FinalRows:
    """:func:`final_actions` and the MERGE's expected counts, from one aggregation per key."""
    rows = table.rows.append_column(EXISTED_COLUMN, existed_before_each(table))
    return finish_final_rows(last_per_key(rows, table.shape, first=(EXISTED_COLUMN,)), table.shape)


def finish_final_rows(last: pa.Table, shape: TableShape) -> FinalRows:
    """The last rows per key (with :data:`EXISTED_COLUMN`) as the MERGE's source, in key order,
    and their counts by past and action."""
    expected = merge_expectation(last)
    rows = last.drop_columns([name for name in _INTERNAL_COLUMNS if name in last.column_names])
    return FinalRows(rows.sort_by([(column, "ascending") for column in shape.primary_key]), expected)


_NOT_THERE_BEFORE = pa.scalar("insert")


def existed_before_each(table: ChangeTable) -> pa.Array:
    """Per row: were it its key's first change in the batch, whether the key existed just before it.

    An insert says no, an update or delete yes, except the after image of a key-changing update,
    whose new key did not exist (it follows its old key's delete, :attr:`ChangeTable.extra_rows`),
    and a change a snapshot chunk may already hold, which says nothing (null: unknown,
    :attr:`ChangeTable.unsettled_rows`).
    """
    existed = pc.not_equal(table.rows[OP_COLUMN], _NOT_THERE_BEFORE)
    if not table.extra_rows and not table.unsettled_rows:
        return existed
    positions = pa.array(range(table.rows.num_rows), pa.int64())
    if table.extra_rows:
        moved_to = pa.array([position + 1 for position in table.extra_rows], pa.int64())
        existed = pc.and_(existed, pc.invert(pc.is_in(positions, value_set=moved_to)))
    if table.unsettled_rows:
        unsettled = pc.is_in(positions, value_set=pa.array(table.unsettled_rows, pa.int64()))
        existed = pc.if_else(unsettled, pa.scalar(None, pa.bool_()), existed)
    return existed


def merge_expectation(last: pa.Table) -> MergeExpectation:
    """The keys of ``last`` (one row each, with :data:`EXISTED_COLUMN`) by past and last action."""
    if last.num_rows == 0:
        return MergeExpectation()
    counts = pa.table({"existed": last[EXISTED_COLUMN], "action": last[ACTION_COLUMN]})
    grouped = counts.group_by(["existed", "action"], use_threads=False).aggregate([([], "count_all")])
    by_kind: dict[str, int] = {}
    for group in grouped.to_pylist():
        past = {True: "existed", False: "new", None: "unknown"}[group["existed"]]
        action = "upserts" if group["action"] == "upsert" else "deletes"
        by_kind[f"{past}_{action}"] = group["count_all"]
    return MergeExpectation(**by_kind)


def last_per_key(rows: pa.Table, shape: TableShape, first: Sequence[str] = ()) -> pa.Table:
    """The last of ``rows`` (binlog order) for each key, every column kept; the columns named in
    ``first`` take their value from the key's *first* row instead (a ``min`` in the same group-by)."""
    keys = list(shape.primary_key)
    numbered = rows.append_column(_ROW_NUMBER, pa.array(range(rows.num_rows), pa.int64()))
    aggregations = [(_ROW_NUMBER, "max"), *([(_ROW_NUMBER, "min")] if first else [])]
    grouped = numbered.group_by(keys, use_threads=False).aggregate(aggregations)
    last = rows.take(grouped[f"{_ROW_NUMBER}_max"])
    for name in first:
        index = last.schema.get_field_index(name)
        last = last.set_column(index, name, rows[name].take(grouped[f"{_ROW_NUMBER}_min"]))
    return last


def changelog_rows(table: ChangeTable, schema: pa.Schema) -> pa.Table:
    """Every change of the batch as a changelog row of ``schema`` (old-key deletes left out)."""
    rows = table.rows
    if table.extra_rows:
        mask = [True] * rows.num_rows
        for position in table.extra_rows:
            mask[position] = False
        rows = rows.filter(pa.array(mask, pa.bool_()))
    rows = rows.append_column(COMMIT_DATE_COLUMN, rows[COMMIT_TS_COLUMN].cast(pa.date32()))
    return rows.select(schema.names).cast(schema)


# --- shipping a change table from a range reader (Spark task) to the driver ----------------------


def change_tables_to_ipc(tables: Mapping[str, ChangeTable]) -> list[tuple[JsonObject, bytes]]:
    """Each table as (shape JSON and extra rows, Arrow IPC stream bytes, LZ4-compressed)."""
    shipped = []
    for table in tables.values():
        sink = pa.BufferOutputStream()
        options = pa.ipc.IpcWriteOptions(compression="lz4")
        with pa.ipc.new_stream(sink, table.rows.schema, options=options) as writer:
            writer.write_table(table.rows)
        header = {
            "shape": table.shape.to_json(),
            "extra_rows": list(table.extra_rows),
            "unsettled_rows": list(table.unsettled_rows),
        }
        shipped.append((header, sink.getvalue().to_pybytes()))
    return shipped


def change_tables_from_ipc(shipped: Sequence[tuple[JsonObject, bytes]]) -> dict[str, ChangeTable]:
    tables = {}
    for header, payload in shipped:
        shape = TableShape.from_json(header["shape"])
        rows = pa.ipc.open_stream(pa.BufferReader(payload)).read_all()
        unsettled = tuple(header.get("unsettled_rows", ()))
        tables[shape.qualified_name] = ChangeTable(shape, rows, tuple(header["extra_rows"]), unsettled)
    return tables
