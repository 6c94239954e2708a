"""The one batch applier: an ordered stream of transactions becomes micro-batches on an opened sink.

Invariant: every batch reaches the sink with ``resume point ∪ {GTID of every transaction fed so
far}`` as its position, and batches are cut only between transactions, so the sink's applied set is
always a prefix of the binlog order. A batch whose position the sink already holds (a replay that
brought nothing new) is not applied. Both appliers feed it: the single reader
(:mod:`.single_reader`, cutting by rows and by time) and parallel catch-up (:mod:`.parallel_catchup`,
cutting by rows, or a whole wave of change tables at once), so "the sink receives exactly what the
single reader would give it" is kept by this one implementation. Guarded by
``test_parallel_catchup_gives_the_same_lake_as_the_single_reader`` and the kill -9 trials
(``tests/integration/test_kill9_recovery.py``).

A schema change (a DDL transaction, or rows whose columns the lake does not have) is applied alone,
at its position, after the batch before it (:mod:`.schema_changes`); from then on the changes of a
table that left the pipeline are dropped, after their GTID counted for the position. A
statement-logged change of a tracked table (:mod:`.statement_changes`) stops the run or makes the
table leave, also after the batch before it.

A table a batch *stopped* (its MERGE did not do what the batch's events imply, :mod:`..lake.batch_check`)
left the pipeline at that batch's position in the sink; from then on its changes are dropped here
like those of a table that left at a DDL, and the run's result lists it (``ApplyResult.stopped``).

Transactions of a table whose snapshot is still in progress pass the snapshot filter here, after
their GTID counted for the position (a change the snapshot already holds is dropped, its
transaction is not). After every applied batch the garbage collector runs (:mod:`..runtime.gc_pause`).

**Waves.** In a catch-up (a read whose end has passed: no one waits for a batch's latency) each cut
batch becomes change tables folded into a :class:`~..lake.change_waves.Wave`, and the sink gets the
whole wave at once when it holds ``wave_max_rows`` row changes, at a schema change and at the end:
each table is merged once per wave, with the last row per key, instead of once per
``batch_max_rows``. The position of a wave is the position after its last transaction, so the
invariant above holds per wave (``test_a_catch_up_merges_each_table_once_per_wave``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from airflow_mysql_cdc.engine.apply.config import ApplyResult
from airflow_mysql_cdc.engine.apply.schema_changes import SchemaChanges
from airflow_mysql_cdc.engine.apply.statement_changes import StatementChanges
from airflow_mysql_cdc.engine.binlog.changes import Transaction
from airflow_mysql_cdc.engine.binlog.errors import StatementBasedChangeError
from airflow_mysql_cdc.engine.binlog.position import PositionTracker
from airflow_mysql_cdc.engine.lake.change_table import ChangeTable, build_change_tables
from airflow_mysql_cdc.engine.lake.change_waves import Wave
from airflow_mysql_cdc.engine.lake.evolution import TableEvolution
from airflow_mysql_cdc.engine.lake.sink import BatchResult, Sink
from airflow_mysql_cdc.engine.runtime.gc_pause import BatchCollector
from airflow_mysql_cdc.engine.runtime.progress import Cadence
from airflow_mysql_cdc.engine.snapshot.change_filter import SnapshotChangeFilter
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet

log = logging.getLogger("airflow_mysql_cdc.apply")

OnBatch = Callable[[int, GtidSet], None]
"""Called after each applied batch with its number in the run and the position it recorded."""


@dataclass
class _Progress:
    started: float = field(default_factory=time.monotonic)
    cadence: Cadence | None = None
    rows: int = 0


class BatchApplier:
    """Collects transactions in binlog order and applies them to ``sink`` as micro-batches."""

    def __init__(
        self,
        sink: Sink,
        resume_from: GtidSet,
        result: ApplyResult,
        snapshot_filter: SnapshotChangeFilter | None,
        collector: BatchCollector,
        on_batch: OnBatch | None = None,
        schema_changes: SchemaChanges | None = None,
        wave: Wave | None = None,
        statement_changes: StatementChanges | None = None,
    ) -> None:
        """``wave``: collect cut batches into it and apply it whole (a catch-up); None: apply each.
        ``statement_changes``: what a statement-logged change of a tracked table does (None: stop)."""
        self.wave = wave
        self.sink = sink
        self.result = result
        self.tracker = PositionTracker(resume_from)
        self.snapshot_filter = snapshot_filter
        self.collector = collector
        self.on_batch = on_batch
        self.schema_changes = schema_changes
        self.statement_changes = statement_changes
        self.pending: list[Transaction] = []
        self.pending_rows = 0
        self.stopped: set[str] = set()
        """Tables a batch of this read stopped: their changes are dropped from then on."""
        self._progress = _Progress()

    @property
    def position(self) -> GtidSet:
        """``resume point ∪ {GTIDs fed so far}``: what the sink holds after the next flush."""
        return self.tracker.value

    def add(self, transaction: Transaction) -> None:
        """Take the next transaction in binlog order into the pending batch."""
        if transaction.statement_changes:
            self._statement_changes(transaction)
        schema_changes = self.schema_changes
        if schema_changes is not None:
            if transaction.schema_change is not None:
                self.flush()
                self.tracker.add(transaction.gtid)
                schema_changes.apply(transaction, self.tracker.value)
                self._counted(transaction)
                return
            if transaction.changes:
                unfit = schema_changes.unfit_tables(transaction)
                if unfit:
                    self.flush()
                    schema_changes.leave_unfit(unfit, transaction, self.tracker.value)
                if schema_changes.left:
                    transaction = without_tables(transaction, schema_changes.left)
        if self.stopped:
            transaction = without_tables(transaction, self.stopped)
        self.tracker.add(transaction.gtid)
        if self.snapshot_filter is not None:
            transaction = self.snapshot_filter.filter(transaction)
        self.pending.append(transaction)
        self.pending_rows += len(transaction.changes)
        self._counted(transaction)

    def _statement_changes(self, transaction: Transaction) -> None:
        """Stop before ``transaction``, or make the tables it changed by statement leave before it
        (they are then dropped from it with the tables that left), after committing what came before."""
        handler = self.statement_changes
        unknown = (
            handler.unknown_rows(transaction)
            if handler is not None
            else {table: change for change in transaction.statement_changes for table in change.tables}
        )
        if not unknown:
            return
        self.flush()
        if handler is None:
            first = next(iter(unknown.values()))
            raise StatementBasedChangeError(
                gtid=str(transaction.gtid),
                statement=first.statement,
                schema=first.default_schema,
                tables=tuple(sorted(unknown)),
                position=self.tracker.value,
            )
        handler.stop_or_leave(unknown, transaction, self.tracker.value)

    def _counted(self, transaction: Transaction) -> None:
        self.result.transactions += 1
        self.result.last_commit_timestamp_us = transaction.commit_timestamp_us

    def cut(self) -> None:
        """End the pending batch: apply it, or in a catch-up fold it into the wave (applied when full)."""
        if self.wave is None:
            self.flush()
            return
        pending, self.pending, self.pending_rows = self.pending, [], 0
        if pending:
            self.wave.add(build_change_tables(pending), len(pending))
        if self.wave.full:
            self._apply_wave()
        else:
            self.sink.heartbeat_if_due()  # a wave may take longer to gather than the lease lasts

    def flush(self) -> None:
        """Apply everything taken so far (nothing when the sink already holds it): the pending
        transactions as one batch, or with the wave they complete."""
        if self.wave is not None:
            self.cut()
            self._apply_wave()
            return
        pending, rows = self.pending, self.pending_rows
        self.pending, self.pending_rows = [], 0
        position = self.tracker.value
        if position == self.sink.applied_gtids:
            return
        self._applied(self.sink.apply(pending, position), position, rows)

    def _apply_wave(self) -> None:
        wave = self.wave
        assert wave is not None
        position = self.tracker.value
        if position != self.sink.applied_gtids:
            log.info(
                "applying a wave of %d transaction(s), %d row change(s)%s",
                wave.transactions,
                wave.rows,
                " (changelog rows spilled to local files)" if wave.spilled else "",
            )
            batch = self.sink.apply_change_tables(wave.tables(), position, wave.transactions)
            self._applied(batch, position, wave.rows)
        wave.clear()

    def apply_change_tables(
        self, marks: Iterable[tuple[str, int]], tables: Mapping[str, ChangeTable]
    ) -> None:
        """Apply change tables built by the range readers as one batch.

        ``marks`` are the ``(GTID, commit timestamp)`` of every transaction they hold, in binlog order.
        """
        count = 0
        for gtid_text, commit_us in marks:
            self.tracker.add(Gtid.parse(gtid_text))
            self.result.last_commit_timestamp_us = commit_us
            count += 1
        self.result.transactions += count
        position = self.tracker.value
        if position == self.sink.applied_gtids:
            return
        if self.stopped:
            tables = {name: table for name, table in tables.items() if name not in self.stopped}
        batch = self.sink.apply_change_tables(tables, position, count)
        self._applied(batch, position, sum(batch.rows_by_table.values()))

    def _applied(self, batch: BatchResult, position: GtidSet, rows: int) -> None:
        for evolution in batch.stopped:
            self.stop(evolution)
        self.result.batches += 1
        for table, table_rows in batch.rows_by_table.items():
            self.result.rows_by_table[table] = self.result.rows_by_table.get(table, 0) + table_rows
        for table, count in batch.transactions_by_table.items():
            self.result.transactions_by_table[table] = self.result.transactions_by_table.get(table, 0) + count
        self._progress.rows += rows
        if self.on_batch is not None:
            self.on_batch(self.result.batches, position)
        self.collector.after_batch()

    def stop(self, evolution: TableEvolution) -> None:
        """``evolution``'s table was stopped (action ``stop``): drop its changes, say so in the result."""
        self.stopped.add(evolution.table)
        if self.schema_changes is not None:
            self.schema_changes.left.add(evolution.table)
        self.result.record_stop(evolution)

    def report_if_due(self, interval_s: float) -> None:
        """Log throughput, batches and lag every ``interval_s`` seconds (:mod:`~..runtime.progress`)."""
        if self._progress.cadence is None:
            self._progress.cadence = Cadence(interval_s)
        if not self._progress.cadence.due():
            return
        now = time.monotonic()
        elapsed = max(now - self._progress.started, 1e-9)
        last_commit_us = self.result.last_commit_timestamp_us
        lag = f"{time.time() - last_commit_us / 1e6:.1f}s" if last_commit_us is not None else "n/a"
        log.info(
            "progress: %d transaction(s), %d row change(s) (%.0f rows/s), lag %s, position %s",
            self.result.transactions,
            self._progress.rows,
            self._progress.rows / elapsed,
            lag,
            self.tracker.value or "(empty)",
        )


def without_tables(transaction: Transaction, tables: set[str]) -> Transaction:
    """The transaction without the changes of ``tables`` (tables that left the pipeline)."""
    if not any(change.shape.qualified_name in tables for change in transaction.changes):
        return transaction
    kept = tuple(change for change in transaction.changes if change.shape.qualified_name not in tables)
    return replace(transaction, changes=kept)


def finish_result(result: ApplyResult, end: GtidSet, started: float, what: str) -> ApplyResult:
    """Stamp the end position, duration and lag on a run's result, and log them."""
    result.end_gtids = end
    result.duration_s = round(time.monotonic() - started, 3)
    if result.last_commit_timestamp_us is not None:
        result.lag_s = round(time.time() - result.last_commit_timestamp_us / 1e6, 3)
    log.info(
        "%s %d transaction(s), %d row change(s) in %d batch(es) in %.1fs; end position %s",
        what,
        result.transactions,
        sum(result.rows_by_table.values()),
        result.batches,
        result.duration_s,
        result.end_gtids or "(empty)",
    )
    return result
