"""Schema changes applied at their position in the stream, and rows checked against the lake's columns.

Invariant: the lake's columns of a streamed table always fit the rows the stream gives it. Two
steps keep it:

1. **at a DDL** (a transaction with a :class:`~..binlog.changes.SchemaChange`), the batch before it
   is committed first, then each table it names gets its :class:`~..lake.evolution.TableEvolution`
   (:mod:`.schema_decisions`), applied by the sink in a commit that records the position including
   the DDL. A table that leaves (dropped, renamed away, to be re-snapshotted) is dropped from every
   later transaction of the read;
2. **at a table map** the stream has not seen (rows with a new shape), its columns are checked
   against the lake's (:func:`~airflow_mysql_cdc.engine.lake.table_shape.fits_lake`); rows that do
   not fit (a statement read wrongly, a swap whose new table differs) make their table leave for a
   re-snapshot *before* that transaction, so no row of the wrong shape reaches the lake.

A table whose snapshot already reflects the DDL (the snapshot ran after it: every chunk's high
watermark holds its GTID) is left as the snapshot wrote it; one whose chunks disagree is
re-snapshotted. The run's result lists every table's action (``schema_changes``); tables to
re-snapshot are snapshotted and joined again by the caller in the same run (the replicate operator).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from airflow_mysql_cdc.engine.apply.schema_decisions import compare_columns, decide
from airflow_mysql_cdc.engine.binlog.changes import SchemaChange, TableShape, Transaction
from airflow_mysql_cdc.engine.lake.evolution import TableEvolution
from airflow_mysql_cdc.engine.lake.sink import Sink
from airflow_mysql_cdc.engine.lake.table_shape import SAME_ROWS, Shape, compatibility, fits_lake
from airflow_mysql_cdc.engine.mysql import ddl as parsed
from airflow_mysql_cdc.engine.mysql.definition import TableDefinition
from airflow_mysql_cdc.engine.mysql.schema import TableMetadata, TableRef, read_table_metadata
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.snapshot.change_filter import SnapshotChangeFilter
from airflow_mysql_cdc.engine.snapshot.lake_commits import SnapshotProgress
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet

log = logging.getLogger("airflow_mysql_cdc.apply")

Recorder = Callable[[TableEvolution], None]
"""Called with the evolution of every table a schema change touched, at its GTID (in the result)."""


class SchemaChanges:
    """One read's schema-change handling: decisions, the sink's commits, and the tables that left."""

    def __init__(
        self,
        sink: Sink,
        endpoint: MySqlEndpoint,
        left: Iterable[str],
        snapshot_filter: SnapshotChangeFilter | None,
        record: Recorder,
        snapshots: Mapping[str, SnapshotProgress | None] | None = None,
    ) -> None:
        self.sink = sink
        self.endpoint = endpoint
        self.left = set(left)
        """Tables whose changes this read drops: not members, or left at a DDL of this read."""
        self.snapshot_filter = snapshot_filter
        self.record = record
        self.snapshots = snapshots or {}
        self._now: dict[str, TableMetadata | None] = {}
        self._fitting: dict[int, TableShape] = {}  # shapes whose columns fit the lake, by id (kept alive)

    def apply(self, transaction: Transaction, position_after: GtidSet) -> None:
        """Apply the DDL transaction's effect on every table it names, at ``position_after``."""
        change = transaction.schema_change
        assert change is not None
        gtid = str(transaction.gtid)
        evolutions = [e for e in self._decisions(change, gtid) if e is not None]
        for evolution in evolutions:
            log.info(
                "schema change %s on %s: %s (%s)", gtid, evolution.table, evolution.action, evolution.reason
            )
            if evolution.leaves:
                self.left.add(evolution.table)
        self.sink.apply_schema_change(
            gtid, change.statement, transaction.commit_timestamp_us, evolutions, position_after
        )
        for evolution in evolutions:
            self.record(evolution.at(gtid))
        self._fitting.clear()  # the next rows of a changed table come with a new table map

    def unfit_tables(self, transaction: Transaction) -> list[str]:
        """Tables whose rows in ``transaction`` have columns the lake cannot take (see point 2)."""
        unfit: list[str] = []
        last: TableShape | None = None
        for change in transaction.changes:
            shape = change.shape
            if shape is last or id(shape) in self._fitting:
                last = shape
                continue
            last = shape
            name = shape.qualified_name
            if name in self.left or name in unfit:
                continue
            lake_fields = self.sink.source_fields(name)
            if lake_fields is None or fits_lake(shape.columns, lake_fields):
                self._fitting[id(shape)] = shape
            else:
                unfit.append(name)
        return unfit

    def leave_unfit(self, tables: list[str], transaction: Transaction, position: GtidSet) -> None:
        """Re-snapshot ``tables`` from before ``transaction`` (the sink holds ``position``)."""
        evolutions = [
            TableEvolution(
                table,
                "resnapshot",
                "its rows arrived with columns the lake does not have (a change the statement did not show)",
            )
            for table in tables
        ]
        self.leave_before(evolutions, transaction, "(rows with a new table map)", position)

    def leave_before(
        self, evolutions: list[TableEvolution], transaction: Transaction, statement: str, position: GtidSet
    ) -> None:
        """The evolutions' tables leave for a re-snapshot *before* ``transaction`` (the sink holds
        ``position``, without its GTID): none of its rows of theirs reaches the lake; their departure
        records its GTID, so only a snapshot taken after it takes them back (:mod:`..lake.departures`).
        """
        for evolution in evolutions:
            log.warning("%s: %s; it is snapshotted again", evolution.table, evolution.reason)
            self.left.add(evolution.table)
        gtid = str(transaction.gtid)
        self.sink.apply_schema_change(gtid, statement, transaction.commit_timestamp_us, evolutions, position)
        for evolution in evolutions:
            self.record(evolution.at(gtid))

    def _decisions(self, change: SchemaChange, gtid: str) -> list[TableEvolution | None]:
        statement = parsed.parse_ddl(change.statement, change.default_schema)
        self._now.clear()  # information_schema is read once per table and DDL (columns, key, declarations)
        decisions: list[TableEvolution | None] = []
        for table in change.tables:
            if table in self.left:
                continue
            reflected = self.snapshot_reflects(table, gtid)
            if reflected == "all":  # the snapshot ran after it; its columns are checked against the table
                what, fields = "its snapshot was taken after this change", self.sink.source_fields(table)
                ref = TableRef.parse(table)
                decisions.append(compare_columns(table, ref, fields, self._columns, what, self._redeclared))
                continue
            decision = decide(
                table,
                statement,
                change.statement,
                self.sink.source_fields(table),
                self._columns,
                self._row_key,
                self._redeclared,
            )
            if decision is not None and reflected == "some" and decision.action != "leave":
                decision = TableEvolution(table, "resnapshot", "the change landed during its snapshot")
            decisions.append(decision)
        return decisions

    def snapshot_reflects(self, table: str, gtid: str) -> str:
        """Whether the table's snapshot chunks hold the change: "all", "some" or "none"."""
        index = self.snapshot_filter.indexes.get(table) if self.snapshot_filter is not None else None
        if index is None or gtid not in index.union_high:
            return "none"
        holding = sum(gtid in chunk.high_watermark for chunk in index.chunks)
        return "all" if holding == len(index.chunks) else "some"

    def _row_key(self, ref: TableRef) -> tuple[str, ...] | None:
        """The key the table's snapshot was chunked and merged by if it is the primary key now, ``()``
        if the table's row key is a unique key (a unique-key change may change it), None if unknown."""
        metadata = self._metadata(ref)
        progress = self.snapshots.get(str(ref))
        if metadata is None or progress is None:
            return None
        return tuple(progress.key) if metadata.key_kind == "primary" else ()

    def _redeclared(self, ref: TableRef) -> str | None:
        """How the table is declared now compared with what its snapshot read, less the columns
        dropped since (None: alike). Columns added since have no recorded declaration: unknown."""
        progress = self.snapshots.get(str(ref))
        if progress is None or progress.definition is None:
            return "the definition its snapshot read is not recorded (an older snapshot), so it may differ"
        metadata = self._metadata(ref)
        if metadata is None:
            return "the table no longer exists"
        now = TableDefinition.of(metadata)
        recorded = progress.definition
        known = {column.name for column in recorded.columns}
        if added := [name for name in self.sink.source_fields(str(ref)) or {} if name not in known]:
            return f"columns added since its snapshot ({', '.join(added)}) have no recorded declaration"
        expected = recorded.without(set(self.sink.dropped_columns(str(ref))))
        verdict = compatibility(Shape.of_definition(expected), Shape.of_definition(now))
        if verdict.within(SAME_ROWS):
            return None
        return f"declared otherwise than when its snapshot read it ({verdict.describe()})"

    def _columns(self, ref: TableRef) -> tuple[ColumnType, ...] | None:
        metadata = self._metadata(ref)
        return tuple(ColumnType.from_column(c) for c in metadata.columns) if metadata is not None else None

    def _metadata(self, ref: TableRef) -> TableMetadata | None:
        """The table as ``information_schema`` has it now (None: gone), read once per DDL."""
        if str(ref) not in self._now:
            with self.endpoint.connect() as connection, connection.cursor() as cursor:
                self._now[str(ref)] = read_table_metadata(cursor, ref)
        return self._now[str(ref)]
