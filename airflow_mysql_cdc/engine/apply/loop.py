"""The long-lived binlog application: read by GTID, cut micro-batches, commit them to the sink.

Invariant: the position handed to the sink with a batch is ``resume point ∪ {GTID of every
transaction received so far}``, which by the reader's invariant is exactly what the batch and
everything before it consumed. Batches are cut only between transactions, so the sink's applied
set is always a prefix of the binlog order; together with the sink's per-table replay detection
that makes the application exactly once across crashes and restarts.

Reading and writing overlap: the reader runs in a thread feeding a bounded queue (backpressure:
a slow sink stops the reader, never grows memory), while this thread cuts a batch when it holds
``batch_max_rows`` row changes or its oldest transaction waited ``batch_max_seconds`` (the live
latency bound), and at the end of the read.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from airflow_mysql_cdc.engine.apply.admission import (
    admit_tables,
    consistent_point,
    join_state,
    read_snapshots,
)
from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.apply.snapshot_filter import load_snapshot_filter
from airflow_mysql_cdc.engine.binlog.changes import Transaction
from airflow_mysql_cdc.engine.binlog.position import PositionTracker
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import StopRule
from airflow_mysql_cdc.engine.lake.delta_sink import DeltaSink
from airflow_mysql_cdc.engine.lake.sink import Sink
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.runtime.gc_pause import BatchCollector
from airflow_mysql_cdc.engine.snapshot.lake_commits import SnapshotProgress
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet

log = logging.getLogger("airflow_mysql_cdc.apply")
_QUEUE_TRANSACTIONS = 10_000
_END = object()


@dataclass
class ApplyResult:
    pipeline_id: str
    requested_start: str
    resumed_from: str
    end_gtids: str
    transactions: int = 0
    rows_by_table: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    duration_s: float = 0.0
    last_commit_timestamp_us: int | None = None
    lag_s: float | None = None
    """Seconds between the last applied transaction's commit and the end of the run."""
    sink_epoch: int = 0
    caught_up: dict[str, str] = field(default_factory=dict)
    """Tables that joined the pipeline after a catch-up, with the GTID set it ended at."""
    consistent_point: str = ""
    """The smallest end at which every table is exact (their snapshots' high watermarks): the run
    did not end before it, even when its interval ended earlier (``table_admission.consistent_point``)."""
    already_applied: bool = False
    """The lake held the whole segment before the run (a retried or cleared run): nothing applied."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def starting(
        cls,
        config: ApplyConfig,
        resume_from: GtidSet,
        sink: Sink | None = None,
        consistent: GtidSet | None = None,
    ) -> ApplyResult:
        """The result of a run that has applied nothing yet, resuming from ``resume_from``."""
        return cls(
            pipeline_id=config.pipeline_id,
            requested_start=str(config.start),
            resumed_from=str(resume_from),
            end_gtids=str(resume_from),
            sink_epoch=getattr(sink, "epoch", 0),
            consistent_point=str(consistent or GtidSet()),
        )


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
                        self.queue.put(transaction, timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if self.stopping.is_set():
                    return
            self.queue.put(_END)
        except BaseException as error:  # noqa: BLE001 - handed to the applying thread
            self.queue.put(error)


@dataclass
class _Progress:
    started: float = field(default_factory=time.monotonic)
    last_report: float = field(default_factory=time.monotonic)
    rows: int = 0


def run_apply(
    config: ApplyConfig,
    endpoint: MySqlEndpoint,
    *,
    sink: Sink | None = None,
    on_batch: Callable[[int, GtidSet], None] | None = None,
    stop_requested: threading.Event | None = None,
) -> ApplyResult:
    """Apply the binlog to the sink as configured; returns what was applied and where it ended.

    Tables that are not yet members of the pipeline are admitted first (caught up from their
    snapshot when needed, see :mod:`.admission`). ``stop_requested`` ends the run early
    (SIGTERM, a benchmark): the pending batch is committed first, so the result's end set is
    exactly what the lake holds.
    """
    started = time.monotonic()
    opened = open_pipeline(config, endpoint, sink=sink, stop_requested=stop_requested)
    if opened.done is not None:
        return opened.done
    rule = config.stop_rule(opened.consistent_point)
    result = _stream(
        config, endpoint, opened.sink, opened.resume_from, rule, on_batch, stop_requested, started,
        opened.snapshots, opened.consistent_point,
    )  # fmt: skip
    result.caught_up = opened.caught_up
    return result


@dataclass
class OpenedPipeline:
    sink: Sink
    resume_from: GtidSet
    caught_up: dict[str, str]
    snapshots: dict[str, SnapshotProgress | None] = field(default_factory=dict)
    """Snapshot progress read while admitting tables (see ``load_snapshot_filter``)."""
    consistent_point: GtidSet = field(default_factory=GtidSet)
    """The run may not end before this (``table_admission.consistent_point``)."""
    done: ApplyResult | None = None
    """Set when the lake already holds the whole segment: nothing is to be read (sink released)."""


def open_pipeline(
    config: ApplyConfig,
    endpoint: MySqlEndpoint,
    *,
    sink: Sink | None = None,
    stop_requested: threading.Event | None = None,
) -> OpenedPipeline:
    """Claim the pipeline, settle where to resume, and admit new tables: every applier starts here.

    Also settles the run's consistent point (every configured table's snapshot high watermarks,
    read from the lake before anything is applied, so a retry finds the same one). On any failure
    the sink is released, so the next attempt need not wait out the lease.
    """
    sink = sink or _delta_sink(config)
    resume_from = sink.open(config.start, rebase=True) if config.rebase else sink.open(config.start)
    if resume_from != config.start:
        log.info("the lake is ahead of the requested start; resuming from the lake: %s", resume_from)
    caught_up: dict[str, str] = {}
    try:
        snapshots = read_snapshots(config.tables, config.lake_root, config.lake_storage_options())
        consistent = consistent_point(snapshots)
        if not consistent.issubset(resume_from):
            log.info(
                "every table is exact only from %s on (its snapshot's high watermarks): this run does not "
                "end before it, even if its interval ends earlier",
                consistent,
            )
        if config.mode == "segment" and resume_from != config.start:
            done = _segment_already_applied(config, endpoint, resume_from, consistent)
            if done is not None:
                _release(sink)
                return OpenedPipeline(sink, resume_from, caught_up, consistent_point=consistent, done=done)
        snapshots = _admit(config, endpoint, sink, resume_from, stop_requested, caught_up, snapshots)
    except BaseException:
        _release(sink)
        raise
    return OpenedPipeline(sink, resume_from, caught_up, snapshots, consistent)


def _segment_already_applied(
    config: ApplyConfig, endpoint: MySqlEndpoint, lake_position: GtidSet, consistent: GtidSet
) -> ApplyResult | None:
    """The result of a segment the lake already holds entirely (a retried or cleared run), or None.

    A segment's end is a pure function of its start and boundary (``UntilCommitTimestamp`` cuts
    the binlog order at the first transaction committed at or after the boundary), so reading the
    binlog from the requested start without applying anything gives the same end set as the
    original run. If the lake contains it, nothing is applied and the sink is not moved backwards.
    """
    reader = BinlogReader(endpoint, tables=config.tables, server_id=config.server_id)
    for _ in reader.read(config.start, config.stop_rule(consistent)):
        pass
    end = reader.position
    if not end.issubset(lake_position):
        return None
    log.info(
        "the lake already holds this whole segment (it ends at %s; the lake is at %s): nothing to apply",
        end or "(empty)",
        lake_position,
    )
    result = ApplyResult.starting(config, lake_position, consistent=consistent)
    result.end_gtids, result.already_applied = str(end), True
    return result


def _delta_sink(config: ApplyConfig, state_path: str | None = None) -> DeltaSink:
    return DeltaSink(
        config.lake_root,
        config.pipeline_id,
        soft_deletes=config.soft_deletes,
        storage_options=config.lake_storage_options(),
        lease_s=config.lease_s,
        state_path=state_path,
    )


def _release(sink: Sink) -> None:
    release = getattr(sink, "release", None)
    if release is not None:
        release()


def _admit(
    config: ApplyConfig,
    endpoint: MySqlEndpoint,
    sink: Sink,
    position: GtidSet,
    stop_requested: threading.Event | None,
    caught_up: dict[str, str],
    snapshots: dict[str, SnapshotProgress | None],
) -> dict[str, SnapshotProgress | None]:
    """Admit the configured tables to the pipeline (sinks without membership admit everything).

    Returns the snapshot progress it used, for the stream's filter.
    """
    if not isinstance(sink, DeltaSink):
        return {}

    def catch_up(ref: TableRef, progress: SnapshotProgress, reflected: GtidSet, target: GtidSet) -> GtidSet:
        store = join_state(
            config.lake_root, config.pipeline_id, ref, progress.snapshot_id, config.lake_storage_options()
        )
        join_config = replace(
            config,
            pipeline_id=store.pipeline_id,
            tables=(str(ref),),
            start_gtids=str(reflected),
            mode="until_gtid_set",
            segment_end_us=None,
            target_gtids=str(target | reflected),
            within_target=True,
        )
        join_sink = _delta_sink(join_config, store.path)
        start = join_sink.open(reflected)
        known = {str(ref): progress}
        began = time.monotonic()
        rule = join_config.stop_rule()
        result = _stream(join_config, endpoint, join_sink, start, rule, None, stop_requested, began, known)
        caught_up[str(ref)] = result.end_gtids
        return GtidSet.parse(result.end_gtids)

    admission = admit_tables(
        config.tables,
        lake_root=config.lake_root,
        pipeline_id=config.pipeline_id,
        position=position,
        members=sink.members,
        first_run=sink.is_new,
        catch_up=catch_up,
        storage_options=config.lake_storage_options(),
        snapshots=snapshots,
    )
    if admission.members != sink.members:
        sink.record_members(admission.members)
    return admission.snapshots


def _stream(
    config: ApplyConfig,
    endpoint: MySqlEndpoint,
    sink: Sink,
    resume_from: GtidSet,
    stop_rule: StopRule,
    on_batch: Callable[[int, GtidSet], None] | None,
    stop_requested: threading.Event | None,
    started: float,
    snapshots: dict[str, SnapshotProgress | None] | None = None,
    consistent: GtidSet | None = None,
) -> ApplyResult:
    """Read from ``resume_from`` and apply to the opened sink until ``stop_rule``; then release it."""
    result = ApplyResult.starting(config, resume_from, sink, consistent)
    reader = BinlogReader(
        endpoint,
        tables=config.tables,
        server_id=config.server_id,
        heartbeat_s=config.heartbeat_s,
        max_buffered_bytes=config.max_buffered_bytes,
    )
    snapshot_filter = load_snapshot_filter(
        endpoint, config.lake_root, config.tables, resume_from, config.lake_storage_options(), snapshots
    )
    thread = _ReaderThread(reader, resume_from, stop_rule)
    collector = BatchCollector()
    tracker = PositionTracker(resume_from)
    pending: list[Transaction] = []
    pending_rows = 0
    oldest_pending: float | None = None
    progress = _Progress()

    def flush() -> None:
        nonlocal pending, pending_rows, oldest_pending
        position = tracker.value
        if position == sink.applied_gtids:
            pending, pending_rows, oldest_pending = [], 0, None
            return
        batch = sink.apply(pending, position)
        result.batches += 1
        for table, rows in getattr(batch, "rows_by_table", {}).items():
            result.rows_by_table[table] = result.rows_by_table.get(table, 0) + rows
        progress.rows += pending_rows
        if on_batch is not None:
            on_batch(result.batches, position)
        pending, pending_rows, oldest_pending = [], 0, None
        collector.after_batch()

    # Paused before the reader thread starts: that thread's own pause per rows event then sees
    # the collector disabled and leaves it alone (two threads toggling it could re-enable it).
    collector.__enter__()
    try:
        thread.start()
        while True:
            timeout = min(config.batch_max_seconds, 0.5)
            if oldest_pending is not None:
                timeout = max(0.0, oldest_pending + config.batch_max_seconds - time.monotonic())
            try:
                item = thread.queue.get(timeout=timeout)
            except queue.Empty:
                item = None
            if item is _END or (stop_requested is not None and stop_requested.is_set()):
                break
            if isinstance(item, BaseException):
                raise item
            if item is not None:
                transaction: Transaction = item
                tracker.add(transaction.gtid)
                if snapshot_filter is not None:
                    transaction = snapshot_filter.filter(transaction)
                pending.append(transaction)
                pending_rows += len(transaction.changes)
                result.transactions += 1
                result.last_commit_timestamp_us = transaction.commit_timestamp_us
                if oldest_pending is None:
                    oldest_pending = time.monotonic()
            due = oldest_pending is not None and time.monotonic() - oldest_pending >= config.batch_max_seconds
            if pending_rows >= config.batch_max_rows or due:
                flush()
            elif item is None and not pending:
                heartbeat = getattr(sink, "heartbeat_if_due", None)
                if heartbeat is not None:
                    heartbeat()
            _report(progress, config, tracker.value, result)
        flush()
        _release(sink)
    finally:
        thread.stopping.set()
        collector.__exit__(None, None, None)
    return finish_result(result, tracker.value, started, "applied")


def finish_result(result: ApplyResult, end: GtidSet, started: float, what: str) -> ApplyResult:
    """Stamp the end position, duration and lag on a run's result, and log them."""
    result.end_gtids = str(end)
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


def _report(progress: _Progress, config: ApplyConfig, position: GtidSet, result: ApplyResult) -> None:
    now = time.monotonic()
    if now - progress.last_report < config.progress_interval_s:
        return
    elapsed = max(now - progress.started, 1e-9)
    lag = (
        f"{time.time() - result.last_commit_timestamp_us / 1e6:.1f}s"
        if result.last_commit_timestamp_us is not None
        else "n/a"
    )
    log.info(
        "progress: %d transaction(s), %d row change(s) applied (%.0f rows/s), %d batch(es), "
        "last applied commit %s ago, position %s",
        result.transactions,
        progress.rows,
        progress.rows / elapsed,
        result.batches,
        lag,
        position,
    )
    progress.last_report = now
