"""One read of the binlog into an opened sink: a reader thread, and batches cut by rows and by time.

Invariant: the sink receives the transactions of :attr:`Read.tables` from :attr:`Read.start` until
:attr:`Read.stop_rule` says stop, in binlog order, through the one batch applier
(:class:`~.batches.BatchApplier`, whose invariant makes the position of every batch exact). What
is read is given by the :class:`Read` alone; the configuration supplies only how (batch limits,
reader settings, the lake), so the pipeline's stream and a joining table's catch-up
(:mod:`.opening`) run the same loop with their own tables and stop rules.

Reading and writing overlap: the reader runs in a thread feeding a bounded queue (backpressure:
a slow sink stops the reader, never grows memory), while this thread cuts a batch when it holds
``batch_max_rows`` row changes or when its oldest transaction must go to Delta to be there
``batch_max_seconds`` after the reader received it (the live latency bound, :mod:`.batch_deadline`),
and at the end of the read. A catch-up (:meth:`~.config.ApplyConfig.catches_up`)
gathers cut batches into waves applied whole (:mod:`.batches`). An idle read keeps the sink's lease
(:meth:`~..lake.sink.Sink.heartbeat_if_due`).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_mysql_cdc.engine.apply.batch_deadline import BatchDeadline
from airflow_mysql_cdc.engine.apply.batches import BatchApplier, OnBatch, finish_result
from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyResult
from airflow_mysql_cdc.engine.apply.schema_changes import SchemaChanges
from airflow_mysql_cdc.engine.apply.snapshot_filter import load_snapshot_filter
from airflow_mysql_cdc.engine.apply.statement_changes import StatementChanges
from airflow_mysql_cdc.engine.binlog.errors import SchemaChangeError, StatementBasedChangeError
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import StopRule
from airflow_mysql_cdc.engine.lake.change_waves import MIB, Wave
from airflow_mysql_cdc.engine.lake.sink import Sink
from airflow_mysql_cdc.engine.runtime.gc_pause import BatchCollector
from airflow_mysql_cdc.engine.snapshot.lake_commits import SnapshotProgress
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet

_QUEUE_TRANSACTIONS = 10_000
_END = object()


@dataclass(frozen=True)
class Read:
    """What one read applies: these tables, from ``start`` (the sink's position) until ``stop_rule``."""

    tables: tuple[str, ...]
    start: GtidSet
    stop_rule: StopRule
    snapshots: Mapping[str, SnapshotProgress | None] = field(default_factory=dict)
    """Snapshot progress already read (table admission), for the snapshot filter to reuse."""
    departed: tuple[str, ...] = ()
    """Tables of ``tables`` that are not streamed (they left the pipeline): their changes are dropped."""


class _ReaderThread(threading.Thread):
    def __init__(self, reader: BinlogReader, start: GtidSet, stop_rule: StopRule) -> None:
        super().__init__(name="binlog-reader", daemon=True)
        self.reader = reader
        self.start_position = start
        self.stop_rule = stop_rule
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=_QUEUE_TRANSACTIONS)
        self.stopping = threading.Event()

    def run(self) -> None:
        try:
            for transaction in self.reader.read(self.start_position, self.stop_rule):
                while not self.stopping.is_set():
                    try:
                        self.queue.put((time.monotonic(), time.time(), transaction), timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if self.stopping.is_set():
                    return
            self.queue.put(_END)
        except BaseException as error:  # noqa: BLE001 - handed to the applying thread
            self.queue.put(error)


def read_into_sink(
    read: Read,
    config: ApplyConfig,
    endpoint: MySqlEndpoint,
    sink: Sink,
    result: ApplyResult,
    *,
    started: float,
    on_batch: OnBatch | None = None,
    stop_requested: threading.Event | None = None,
) -> ApplyResult:
    """Apply ``read`` to the opened ``sink``, then release it; ``result`` is completed and returned.

    ``stop_requested`` ends the read early: the pending batch is committed first, so the result's
    end set is exactly what the sink holds.
    """
    reader = BinlogReader(
        endpoint,
        tables=read.tables,
        server_id=config.server_id,
        heartbeat_s=config.heartbeat_s,
        max_buffered_bytes=config.max_buffered_bytes,
        evolve_schema=config.evolves_schema,
        mark_statement_changes=True,
    )
    applier = _applier(read, config, endpoint, sink, result, on_batch)
    thread = _ReaderThread(reader, read.start, read.stop_rule)
    # Paused before the reader thread starts: that thread's own pause per rows event then sees
    # the collector disabled and leaves it alone (two threads toggling it could re-enable it).
    applier.collector.__enter__()
    try:
        thread.start()
        _drain(thread, applier, config, stop_requested)
        applier.flush()
        sink.release()
    except (SchemaChangeError, StatementBasedChangeError):
        sink.release()  # a stop the policy asked for, after a flush: the next attempt need not wait
        raise
    finally:
        thread.stopping.set()
        if applier.wave is not None:
            applier.wave.clear()
        applier.collector.__exit__(None, None, None)
        result.binlog_bytes_read += reader.bytes_read
    return finish_result(result, applier.position, started, "applied")


def _applier(
    read: Read,
    config: ApplyConfig,
    endpoint: MySqlEndpoint,
    sink: Sink,
    result: ApplyResult,
    on_batch: OnBatch | None,
) -> BatchApplier:
    """The batch applier of one read: its snapshot filter, schema- and statement-change handling and,
    in a catch-up, its wave."""
    snapshot_filter = load_snapshot_filter(endpoint, read.tables, read.start, read.snapshots)
    schema_changes = SchemaChanges(
        sink, endpoint, read.departed, snapshot_filter, result.schema_changes.append, read.snapshots
    )
    wave = Wave(config.wave_max_rows, int(config.wave_memory_mb * MIB)) if config.catches_up() else None
    return BatchApplier(
        sink,
        read.start,
        result,
        snapshot_filter,
        BatchCollector(),
        on_batch,
        schema_changes,
        wave=wave,
        statement_changes=StatementChanges(config.statement_changes, schema_changes),
    )


def _drain(
    thread: _ReaderThread, applier: BatchApplier, config: ApplyConfig, stop_requested: threading.Event | None
) -> None:
    """Feed the reader's transactions to ``applier``, cutting a batch at ``batch_max_rows`` or when its
    oldest transaction must go to Delta to be there ``batch_max_seconds`` after it was read
    (:mod:`.batch_deadline`), until the read ends or a stop is requested."""
    deadline = BatchDeadline(config.batch_max_seconds)
    oldest_arrival: float | None = None
    while True:
        timeout = min(config.batch_max_seconds, 0.5)
        if oldest_arrival is not None:
            timeout = max(0.0, deadline.due_at(oldest_arrival) - time.monotonic())
        try:
            item = thread.queue.get(timeout=timeout)
        except queue.Empty:
            item = None
        if item is _END or (stop_requested is not None and stop_requested.is_set()):
            return
        if isinstance(item, BaseException):
            if isinstance(item, SchemaChangeError):
                applier.flush()  # schema_changes: stop: the lake is exact up to the DDL
            raise item
        if item is not None:
            arrival, arrival_wall, transaction = item
            applier.add(transaction)
            if oldest_arrival is None:
                oldest_arrival = deadline.committed_at(arrival, arrival_wall, transaction.commit_timestamp_us)
        # Past its deadline, a batch still takes what already waits in the queue: a reader ahead of
        # the lake then fills batches instead of cutting one per transaction (it arrived long ago).
        due = (
            oldest_arrival is not None
            and time.monotonic() >= deadline.due_at(oldest_arrival)
            and thread.queue.empty()
        )
        if applier.pending_rows >= config.batch_max_rows or due:
            batches, cut_at = applier.result.batches, time.monotonic()
            applier.cut()
            if applier.result.batches != batches:
                deadline.committed(time.monotonic() - cut_at)
            oldest_arrival = None
        elif item is None and not applier.pending:
            applier.sink.heartbeat_if_due()
        applier.report_if_due(config.progress_interval_s)
