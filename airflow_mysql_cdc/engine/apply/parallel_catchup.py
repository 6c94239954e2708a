"""Catch up a past segment with k binlog readers at once, one per GTID range, applied in binlog order.

Invariant: the sink receives exactly the transactions, in exactly the order, that the single reader
of :func:`~.single_reader.run_apply` would give it for the same configuration, each batch with the
position ``resume point ∪ {GTIDs fed so far}``, so the lake ends in the same state (target tables,
changelog, applied set); only where batches are cut may differ (the single loop also cuts by time).
It holds because

1. **the segment is known before reading**: ``end`` is ``@@gtid_executed`` read after the segment
   closed (``until_caught_up``; ``segment`` once the server clock is past the boundary plus the
   settle margin of :class:`~..binlog.stop_rules.UntilCommitTimestamp`) or the target of
   ``until_gtid_set``. Anything else (a live tail, a boundary still ahead) runs the single reader;
2. **each range reader gets only its range** (:mod:`~airflow_mysql_cdc.engine.values.gtid_ranges`):
   it starts from ``end - range`` and stops when its range is consumed. It checks, per transaction,
   that the GTID belongs to its range and that numbers grow; if not (GTIDs assigned out of order by
   hand, a target that is not a prefix of the binlog), it reports a violation and nothing of its
   wave is applied;
3. **ranges are concatenated in number order**, which within one server UUID is binlog order, so
   the driver feeds the sink one ordered stream, cut into micro-batches between transactions, each
   with ``resume point ∪ {GTIDs fed so far}`` as its position, by the single reader's own batch
   applier (:class:`~.batches.BatchApplier`);
4. **the commit-timestamp cut is exact**: in ``segment`` mode a range reader stops *before* its first
   transaction committed at or after the boundary and reports its GTID; the earliest such GTID over
   all ranges is the first one in binlog order, i.e. where the single reader stops (prefix
   semantics), and every transaction from it on is dropped. Transactions of the run's consistent
   point are never a cut (the single reader does not stop before it either); the driver checks that
   the position contains it at the end;
5. **any doubt falls back**: a violation or a failed range reader makes the run continue with the
   single reader from what the lake holds (which then raises the typed reader error, if any).

Work flows in waves of ``parallelism`` ranges (bounded driver memory: a wave's transactions, plus
the next wave, read while this one is applied). Guarded by
``test_parallel_catchup_gives_the_same_lake_as_the_single_reader`` and
``test_parallel_segment_catchup_cuts_at_the_same_commit_timestamp_as_the_single_reader``.

Server-side cost (see docs/benchmarks.md for the scaling model): each range reader is its own
dump thread, which opens the binlog file holding the first transaction of its range and reads every
event from there to the end of its range, sending only its own transactions.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from airflow_mysql_cdc.engine.apply.batches import BatchApplier, finish_result
from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyResult
from airflow_mysql_cdc.engine.apply.opening import OpenedPipeline, open_pipeline
from airflow_mysql_cdc.engine.apply.range_reader import (
    RangeResult,
    RangeRunner,
    RangeTask,
    run_ranges_in_threads,
)
from airflow_mysql_cdc.engine.apply.single_reader import departed_tables, run_apply
from airflow_mysql_cdc.engine.apply.snapshot_filter import load_snapshot_filter
from airflow_mysql_cdc.engine.binlog.changes import Transaction
from airflow_mysql_cdc.engine.binlog.stop_rules import UntilCommitTimestamp
from airflow_mysql_cdc.engine.binlog.stream import ControlConnection, random_server_id
from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.lake.change_table import change_tables_from_ipc, concat_change_tables
from airflow_mysql_cdc.engine.lake.sink import Sink
from airflow_mysql_cdc.engine.runtime.gc_pause import BatchCollector
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.gtid_ranges import RangePlan, split_segment

log = logging.getLogger("airflow_mysql_cdc.apply")
DEFAULT_WAVE_TRANSACTIONS = 20_000
# At least this many waves when the segment allows: the driver applies wave n while the executors
# read wave n+1, so only the last wave's apply is not overlapped with reading. Each range costs a
# reader start (connections, settings check, the server's scan to the range: 60-90 ms measured), so
# more waves than needed for the overlap cost more than they save: on 100,000 changes with k=2, two
# waves ran in 2.1-2.3 s, four in 2.6 s (docs/benchmarks.md).
DEFAULT_MIN_WAVES = 2


# --- the segment -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CatchupSegment:
    end: GtidSet
    boundary_us: int | None


def catchup_segment(config: ApplyConfig, endpoint: MySqlEndpoint) -> CatchupSegment | None:
    """The segment's end set when it is known before reading; None when the run must tail the binlog."""
    control = ControlConnection(endpoint)
    try:
        if config.mode == "until_caught_up":
            return CatchupSegment(control.gtid_executed(), None)
        if config.mode == "until_gtid_set":
            target = config.target_gtids or GtidSet()
            # A target the server has not executed yet: the single reader refuses it with its error.
            return CatchupSegment(target, None) if target.issubset(control.gtid_executed()) else None
        if config.mode == "segment":
            assert config.segment_end_us is not None
            settle_us = UntilCommitTimestamp(config.segment_end_us).settle_us
            if control.now_us() < config.segment_end_us + settle_us:
                return None  # the segment is still open: tail it live with the single reader
            # Read after the boundary plus settle: holds every transaction committed before it.
            return CatchupSegment(control.gtid_executed(), config.segment_end_us)
        return None
    finally:
        control.close()


# --- the driver --------------------------------------------------------------------------------------


class _Fallback(CdcError):
    """A wave cannot be applied as read; the run continues with the single reader."""


def _stopped(stop_requested: threading.Event | None) -> bool:
    return stop_requested is not None and stop_requested.is_set()


@dataclass
class _Wave:
    tasks: list[RangeTask]
    future: Future[list[RangeResult]] | None = None
    results: list[RangeResult] = field(default_factory=list)


def run_parallel_catchup(
    config: ApplyConfig,
    endpoint: MySqlEndpoint,
    *,
    parallelism: int,
    run_ranges: RangeRunner = run_ranges_in_threads,
    sink: Sink | None = None,
    wave_transactions: int = DEFAULT_WAVE_TRANSACTIONS,
    min_waves: int = DEFAULT_MIN_WAVES,
    stop_requested: threading.Event | None = None,
    columnar: bool | None = None,
) -> ApplyResult:
    """Apply a past segment with ``parallelism`` range readers; the same lake as :func:`run_apply`.

    Runs the single reader instead when the segment's end is not known yet, and continues with it
    from what the lake holds when a range reader reports a problem. ``columnar`` (default: whenever
    possible) makes the range readers ship Arrow change tables instead of transactions.
    """
    segment = catchup_segment(config, endpoint) if parallelism > 1 else None
    if segment is None:
        return run_apply(config, endpoint, sink=sink, stop_requested=stop_requested)
    started = time.monotonic()
    opened = open_pipeline(config, endpoint, sink=sink, stop_requested=stop_requested)
    if opened.done is not None:
        return opened.done
    sink, resume_from = opened.sink, opened.resume_from
    # Tables out of the stream (paused, or waiting for a snapshot after a DDL) are not read at all.
    streamed = tuple(
        name for name in config.tables if name not in departed_tables(config.tables, sink.members)
    )
    if streamed and streamed != config.tables:
        config = replace(config, tables=streamed)
    plan = _plan(resume_from, segment.end | resume_from, parallelism, min_waves, wave_transactions)
    applier = _applier(config, endpoint, opened)
    snapshot_filter = applier.snapshot_filter
    # Range readers build the Arrow change tables themselves, unless a snapshot filter must see
    # each change (a table whose snapshot is still in progress).
    possible = snapshot_filter is None
    columnar = possible if columnar is None else columnar and possible
    waves = _waves(
        plan, config, endpoint, segment.boundary_us, parallelism, columnar, opened.consistent_point
    )
    try:
        _apply_waves(
            plan, waves, run_ranges, applier, applier.collector, config.batch_max_rows, stop_requested
        )
        if not opened.consistent_point.issubset(applier.position) and not _stopped(stop_requested):
            raise _Fallback(
                f"the ranges ended at {applier.position}, before the consistent point "
                f"{opened.consistent_point}"
            )
    except _Fallback as reason:
        log.warning("parallel catch-up: %s; continuing with the single reader from the lake", reason)
        sink.release()
        rest = run_apply(config, endpoint, stop_requested=stop_requested)
        done = finish_result(applier.result, applier.position, started, "parallel catch-up applied")
        return ApplyResult.combine([done, rest])
    sink.release()
    return finish_result(applier.result, applier.position, started, "parallel catch-up applied")


def _applier(config: ApplyConfig, endpoint: MySqlEndpoint, opened: OpenedPipeline) -> BatchApplier:
    """The batch applier of the catch-up, with its result started at the pipeline's position."""
    result = opened.starting_result(config)
    snapshot_filter = load_snapshot_filter(endpoint, config.tables, opened.resume_from, opened.snapshots)
    return BatchApplier(opened.sink, opened.resume_from, result, snapshot_filter, BatchCollector())


def _plan(
    resume_from: GtidSet, end: GtidSet, parallelism: int, min_waves: int, wave_transactions: int
) -> RangePlan:
    """The segment from ``resume_from`` to ``end`` in ``parallelism`` ranges per wave, with as many
    waves as ``wave_transactions`` per range needs (at least ``min_waves``)."""
    count = (end - resume_from).count()
    waves_needed = max(min_waves, math.ceil(count / max(1, wave_transactions)))
    plan = split_segment(resume_from, end, parallelism * waves_needed)
    if plan.reason_not_split:
        log.info("parallel catch-up: one reader only, because %s", plan.reason_not_split)
    log.info(
        "parallel catch-up of %d transaction(s) from %s to %s: %d range(s) in waves of %d",
        count,
        resume_from or "(empty)",
        end,
        len(plan.ranges),
        parallelism,
    )
    return plan


def _waves(
    plan: RangePlan,
    config: ApplyConfig,
    endpoint: MySqlEndpoint,
    boundary_us: int | None,
    parallelism: int,
    columnar: bool,
    consistent_point: GtidSet,
) -> list[_Wave]:
    server_ids: set[int] = set()
    while len(server_ids) < len(plan.ranges):
        server_ids.add(config.server_id + len(server_ids) + 1 if config.server_id else random_server_id())
    tasks = [
        RangeTask(
            endpoint=endpoint.with_database(None),
            tables=tuple(config.tables),
            index=index,
            reader_start=str(plan.reader_start(index)),
            range_gtids=str(range_gtids),
            boundary_us=boundary_us,
            server_id=server_id,
            heartbeat_s=config.heartbeat_s,
            max_buffered_bytes=config.max_buffered_bytes,
            columnar=columnar,
            consistent_point=str(consistent_point),
        )
        for (index, range_gtids), server_id in zip(enumerate(plan.ranges), sorted(server_ids), strict=True)
    ]
    return [_Wave(tasks[first : first + parallelism]) for first in range(0, len(tasks), parallelism)]


def _apply_waves(
    plan: RangePlan,
    waves: list[_Wave],
    run_ranges: RangeRunner,
    applier: BatchApplier,
    collector: BatchCollector,
    batch_max_rows: int,
    stop_requested: threading.Event | None,
) -> None:
    """Read wave n+1 while wave n is applied; stop after the wave that holds the boundary cut."""
    if not waves:
        return
    with (
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="range-wave") as prefetch,
        collector,
    ):
        waves[0].future = prefetch.submit(run_ranges, waves[0].tasks)
        for number, wave in enumerate(waves):
            assert wave.future is not None
            try:
                results = sorted(wave.future.result(), key=lambda r: r.index)
            except Exception as error:  # noqa: BLE001 - e.g. the Spark context died: nothing was applied
                raise _Fallback(f"the range readers of wave {number + 1} failed: {error!r}") from error
            problems = [f"range {r.index}: {r.problem}" for r in results if r.problem]
            if problems:
                raise _Fallback("; ".join(problems))
            cuts = [r.cut for r in results if r.cut is not None]
            if not cuts and number + 1 < len(waves):
                waves[number + 1].future = prefetch.submit(run_ranges, waves[number + 1].tasks)
            if cuts:
                # Ranges are consecutive in number order, which is binlog order (one UUID when split):
                # the first range with a cut stopped where the single reader stops; later ones go.
                first_cut_range = next(index for index, r in enumerate(results) if r.cut is not None)
                results = results[: first_cut_range + 1]
            log.info(
                "wave %d/%d read: %d transaction(s), %d row change(s); range readers took %s s",
                number + 1,
                len(waves),
                sum(len(r.marks) if r.change_tables is not None else len(r.transactions) for r in results),
                sum(r.rows for r in results),
                ", ".join(f"{r.seconds:.1f}" for r in results),
            )
            if all(r.change_tables is not None for r in results):
                # The wave as one micro-batch: its change tables concatenated in number order.
                applier.apply_change_tables(
                    [mark for r in results for mark in r.marks],
                    concat_change_tables([change_tables_from_ipc(r.change_tables or []) for r in results]),
                )
                fed = not _stopped(stop_requested)
            else:
                transactions = [t for r in results for t in r.transactions]
                fed = _feed(applier, transactions, batch_max_rows, stop_requested)
            if not fed:
                return
            if cuts:
                return
    if applier.position != plan.end:
        raise _Fallback(f"the ranges ended at {applier.position}, not at the segment end {plan.end}")


def _feed(
    applier: BatchApplier,
    transactions: list[Transaction],
    batch_max_rows: int,
    stop_requested: threading.Event | None,
) -> bool:
    """Apply ``transactions`` in order, cut by rows; False when a stop was requested (batch committed)."""
    for transaction in transactions:
        applier.add(transaction)
        if applier.pending_rows >= batch_max_rows:
            applier.flush()
            if _stopped(stop_requested):
                return False
    applier.flush()
    return not _stopped(stop_requested)
