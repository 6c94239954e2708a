"""Hand-built transactions for sink tests (the binlog reader's tests prove real ones look alike)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from airflow_mysql_cdc.engine.binlog.changes import Op, RowChange, TableShape, Transaction
from airflow_mysql_cdc.engine.lake.change_table import ChangeTable
from airflow_mysql_cdc.engine.lake.evolution import TableEvolution
from airflow_mysql_cdc.engine.lake.sink import BatchResult
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet

SOURCE_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
BASE_US = 1_790_000_000_000_000

ORDERS = TableShape(
    "shop",
    "orders",
    (ColumnType("id", "int", bits=64), ColumnType("status", "text"), ColumnType("qty", "uint", bits=32)),
    ("id",),
)
ITEMS = TableShape("shop", "items", (ColumnType("sku", "text"), ColumnType("price", "double")), ("sku",))


def insert(shape: TableShape, row: dict[str, Any]) -> RowChange:
    return RowChange(shape, Op.INSERT, None, row, tuple(row[c] for c in shape.primary_key))


def update(shape: TableShape, before: dict[str, Any], after: dict[str, Any]) -> RowChange:
    return RowChange(shape, Op.UPDATE, before, after, tuple(after[c] for c in shape.primary_key))


def delete(shape: TableShape, row: dict[str, Any]) -> RowChange:
    return RowChange(shape, Op.DELETE, row, None, tuple(row[c] for c in shape.primary_key))


def transaction(number: int, *changes: RowChange) -> Transaction:
    return Transaction(Gtid(SOURCE_UUID, number), BASE_US + number * 1_000_000, tuple(changes))


def through(number: int) -> GtidSet:
    return GtidSet.parse(f"{SOURCE_UUID}:1-{number}") if number else GtidSet()


class RecordingSink:
    """An in-memory :class:`~airflow_mysql_cdc.engine.lake.sink.Sink` (the whole protocol) that records
    each batch it is given, for the pure logic of the appliers; Delta's own behaviour is tested on Delta."""

    def __init__(self, applied: GtidSet | None = None) -> None:
        self._applied = applied or GtidSet()
        self._members: dict[str, str] | None = {}
        self.epoch = 0
        self.batches: list[tuple[list[Gtid], GtidSet]] = []
        self.heartbeats = 0
        self.released = False
        self.fields: dict[str, dict[str, pa.DataType]] = {}
        """Each table's source columns in the "lake" (absent: no target yet)."""
        self.dropped: dict[str, tuple[str, ...]] = {}
        self.schema_changes: list[tuple[str, list[TableEvolution], GtidSet]] = []
        self.stopped_at_open: list[TableEvolution] = []
        """Tables the open stopped (a test sets them: the Delta sink's check is tested on Delta)."""

    def open(self, requested_start: GtidSet, *, rebase: bool = False, keep_members: bool = False) -> GtidSet:
        self.epoch += 1
        if rebase or not requested_start.issubset(self._applied):
            self._applied = requested_start
        return self._applied

    def heartbeat_if_due(self) -> None:
        self.heartbeats += 1

    def release(self) -> None:
        self.released = True

    @property
    def members(self) -> dict[str, str] | None:
        return self._members

    @property
    def is_new(self) -> bool:
        return not self.batches and not self._members

    def record_members(self, members: dict[str, str]) -> None:
        self._members = dict(members)

    @property
    def applied_gtids(self) -> GtidSet:
        return self._applied

    def apply(self, transactions: Sequence[Transaction], position_after: GtidSet) -> BatchResult:
        rows: dict[str, int] = {}
        for one in transactions:
            for change in one.changes:
                name = f"{change.shape.schema}.{change.shape.table}"
                rows[name] = rows.get(name, 0) + 1
        return self._commit([one.gtid for one in transactions], position_after, rows)

    def apply_change_tables(
        self, tables: Mapping[str, ChangeTable], position_after: GtidSet, transactions: int
    ) -> BatchResult:
        rows = {name: table.change_count for name, table in tables.items()}
        return self._commit([], position_after, rows)

    def source_fields(self, name: str) -> dict[str, pa.DataType] | None:
        return dict(self.fields[name]) if name in self.fields else None

    def dropped_columns(self, name: str) -> tuple[str, ...]:
        return self.dropped.get(name, ())

    def apply_schema_change(
        self,
        gtid: str,
        statement: str,
        commit_timestamp_us: int,
        evolutions: Sequence[TableEvolution],
        position_after: GtidSet,
    ) -> None:
        """Like the Delta sink: columns added, drops recorded, leavers out of the members, one position."""
        assert self._applied.issubset(position_after), "the position went backwards"
        for evolution in evolutions:
            evolution.check_applicable()
            if evolution.table in self.fields:
                for column in evolution.new_columns:
                    self.fields[evolution.table].setdefault(column.column.name, column.delta_field().type)
            self.dropped[evolution.table] = (*self.dropped.get(evolution.table, ()), *evolution.dropped)
            if evolution.leaves and self._members is not None:
                self._members.pop(evolution.table, None)
        self.schema_changes.append((gtid, list(evolutions), position_after))
        self._applied = position_after

    def _commit(self, gtids: list[Gtid], position_after: GtidSet, rows: dict[str, int]) -> BatchResult:
        assert self._applied.issubset(position_after), "the position went backwards"
        self.batches.append((gtids, position_after))
        self._applied = position_after
        return BatchResult(len(self.batches), position_after, len(gtids), rows)


def crash_before_the_state_commit(monkeypatch, sink) -> None:
    """Make ``sink``'s next batch die like a kill -9 after its table commits, before the state's:
    the batch's intent reaches the state (the first state commit); its position never does, whether
    the batch commits it itself (a batch that stops a table) or leaves it to the lease's next commit
    (:meth:`.Lease.defer`, every plain batch)."""
    store, apply_change_tables = sink._state_store, sink.apply_change_tables
    commit = store.commit
    calls = []

    def killed(message: str) -> KeyboardInterrupt:
        return KeyboardInterrupt(f"killed after the table commits, before the state commit ({message})")

    def crash_at_the_position_commit(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            return commit(*args, **kwargs)
        raise killed("the batch's own position commit")

    def crash_after_the_batch(*args, **kwargs):
        apply_change_tables(*args, **kwargs)
        raise killed("its position waits for the lease's next commit")

    monkeypatch.setattr(store, "commit", crash_at_the_position_commit)
    monkeypatch.setattr(sink, "apply_change_tables", crash_after_the_batch)
