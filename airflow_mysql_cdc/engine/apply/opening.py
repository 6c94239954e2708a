"""Open the pipeline for a run: claim the sink, settle where to resume, admit the tables.

Invariant: every applier (the single reader, parallel catch-up) starts from what
:func:`open_pipeline` returns, and nothing is applied before it returned:

1. **the claim**: the sink is opened (the next epoch, fencing any older writer) and names the
   position to resume from: the lake's applied set when the requested start is contained in it,
   a refusal when the lake is behind or off the start (:mod:`..lake.sink`);
2. **the consistent point**: every configured table's snapshot high watermarks, read from the lake
   before anything is applied, so every retry of a run finds the same one; the run does not end
   before it;
3. **a segment the lake already holds** (a retried or cleared run) is read without applying and
   reported as ``already_applied``: the lake never moves backwards;
4. **pauses**: a member table the run is asked to pause leaves the members at the claimed position,
   marked with it (:mod:`..lake.pauses`) before the members change, so a retry finds either the
   member (and pauses it again at the same position: nothing was applied in between) or the mark;
5. **admission**: a table that is not yet a member joins only once its lake copy fits the position
   (:mod:`.admission`); a catch-up it needs is its own read (:class:`~.reading.Read`) of that table
   only, from what it reflects, never past the pipeline's position (``WithinGtidSet``), written
   under its own state so the pipeline's lease is untouched. A paused table stays out unless the
   run resumes it; its mark is cleared only after it is a member again;
6. **stops**: a table the sink's open found changed by another writer since the pipeline's last
   commit (:mod:`..lake.outside_changes`), or whose catch-up stopped it, is out of the pipeline
   and in the run's result (``ApplyResult.stopped``): the run fails once it published the rest.

On any failure the sink is released, so the next attempt need not wait out the lease. Guarded by
``tests/integration/test_table_admission.py`` and ``test_rerunning_the_same_segment_applies_nothing``.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from dataclasses import dataclass, field

from airflow_mysql_cdc.engine.apply.admission import (
    Admission,
    admit_tables,
    consistent_point,
    join_state,
    read_snapshots,
)
from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyResult
from airflow_mysql_cdc.engine.apply.reading import Read, read_into_sink
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import WithinGtidSet
from airflow_mysql_cdc.engine.lake.delta_sink import DeltaSink
from airflow_mysql_cdc.engine.lake.evolution import TableEvolution
from airflow_mysql_cdc.engine.lake.pauses import PauseMark, clear_pause, mark_paused
from airflow_mysql_cdc.engine.lake.rebases import RebaseMark, mark_rebased, rebase_of
from airflow_mysql_cdc.engine.lake.sink import Sink
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.snapshot.lake_commits import SnapshotProgress
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet

log = logging.getLogger("airflow_mysql_cdc.apply")


@dataclass
class OpenedPipeline:
    sink: Sink
    resume_from: GtidSet
    caught_up: dict[str, GtidSet]
    snapshots: dict[str, SnapshotProgress | None] = field(default_factory=dict)
    """Snapshot progress read while admitting tables (see ``load_snapshot_filter``)."""
    consistent_point: GtidSet = field(default_factory=GtidSet)
    """The run may not end before this (``admission.consistent_point``)."""
    done: ApplyResult | None = None
    """Set when the lake already holds the whole segment: nothing is to be read (sink released)."""
    stopped: list[TableEvolution] = field(default_factory=list)
    """Tables stopped while the pipeline opened (the sink's check, a joining table's catch-up)."""
    standing_stopped: dict[str, str] = field(default_factory=dict)
    """Tables out because the lake marks them stopped (this run or before), with what to say."""

    def starting_result(self, config: ApplyConfig) -> ApplyResult:
        """The run's result before anything is read: where it resumes, the tables that joined."""
        result = ApplyResult.starting(
            config.pipeline_id,
            config.start,
            self.resume_from,
            sink_epoch=self.sink.epoch,
            consistent=self.consistent_point,
        )
        result.caught_up = dict(self.caught_up)
        result.stopped_tables.update(self.standing_stopped)
        for evolution in self.stopped:
            result.record_stop(evolution)
        return result


def open_pipeline(
    config: ApplyConfig,
    endpoint: MySqlEndpoint,
    *,
    sink: Sink | None = None,
    stop_requested: threading.Event | None = None,
) -> OpenedPipeline:
    """Claim the pipeline, settle where to resume, and admit new tables: every applier starts here.

    One :class:`LakeState` serves the whole opening (the sink, the snapshots, marks and catch-ups)."""
    lake = config.lake_state()
    sink = sink or delta_sink(config, lake)
    if config.keep_members:
        _mark_rebased(config, lake)
    if config.rebase:
        resume_from = sink.open(config.start, rebase=True, keep_members=config.keep_members)
    else:
        resume_from = sink.open(config.start)
    if resume_from != config.start:
        log.info("the lake is ahead of the requested start; resuming from the lake: %s", resume_from)
    caught_up: dict[str, GtidSet] = {}
    stops = list(sink.stopped_at_open)
    try:
        snapshots = read_snapshots(config.tables, lake)
        consistent = consistent_point(snapshots, _rebased(config, lake))
        if not consistent.issubset(resume_from):
            log.info(
                "every table is exact only from %s on (its snapshot's high watermarks): this run does not "
                "end before it, even if its interval ends earlier",
                consistent,
            )
        if config.mode == "segment" and resume_from != config.start:
            done = _segment_already_applied(config, endpoint, resume_from, consistent)
            if done is not None:
                sink.release()
                for evolution in stops:
                    done.record_stop(evolution)
                return OpenedPipeline(sink, resume_from, caught_up, consistent_point=consistent, done=done)
        _pause(config, lake, sink, resume_from)
        admission = _admit(
            config, lake, endpoint, sink, resume_from, stop_requested, caught_up, snapshots, stops
        )
    except BaseException:
        sink.release()
        raise
    return OpenedPipeline(
        sink, resume_from, caught_up, admission.snapshots, consistent, stopped=stops,
        standing_stopped=admission.stopped,
    )  # fmt: skip


def _mark_rebased(config: ApplyConfig, lake: LakeState) -> None:
    """Mark every member's target with the snapshot a confirmed rebase vouches for (:mod:`..lake.rebases`).

    Before the claim: the marks only say which snapshots' watermarks belong to the old history, and
    a retry writes the same ones.
    """
    state = lake.pipeline()
    for name, snapshot_id in ((state.members or {}) if state else {}).items():
        target = lake.target(TableRef.parse(name))
        if target is not None and snapshot_id:
            mark_rebased(target, RebaseMark(snapshot_id, str(config.start), config.run_id))


def _rebased(config: ApplyConfig, lake: LakeState) -> dict[str, str]:
    """Table -> the snapshot a confirmed rebase vouched for (its watermarks bound nothing)."""
    rebased: dict[str, str] = {}
    for name in config.tables:
        target = lake.target(TableRef.parse(name))
        mark = rebase_of(target) if target is not None else None
        if mark is not None:
            rebased[str(TableRef.parse(name))] = mark.snapshot_id
    return rebased


def delta_sink(
    config: ApplyConfig,
    lake: LakeState,
    state_path: str | None = None,
    tables: tuple[str, ...] | None = None,
) -> DeltaSink:
    """The Delta sink of ``lake`` (``config``'s, or a joining table's: its own id and ``state_path``),
    writing ``tables`` (default: the configuration's)."""
    return DeltaSink(
        lake,
        soft_deletes=config.soft_deletes,
        lease_s=config.lease_s,
        state_path=state_path,
        tables=config.tables if tables is None else tables,
        unsettled=config.unsettled,
    )


def _segment_already_applied(
    config: ApplyConfig, endpoint: MySqlEndpoint, lake_position: GtidSet, consistent: GtidSet
) -> ApplyResult | None:
    """The result of a segment the lake already holds entirely (a retried or cleared run), or None.

    A segment's end is a pure function of its start and boundary (``UntilCommitTimestamp`` cuts
    the binlog order at the first transaction committed at or after the boundary), so reading the
    binlog from the requested start without applying anything gives the same end set as the
    original run. If the lake contains it, nothing is applied and the sink is not moved backwards.
    """
    reader = BinlogReader(
        endpoint,
        tables=config.tables,
        server_id=config.server_id,
        evolve_schema=config.evolves_schema,
        mark_statement_changes=True,  # only the end is wanted here; the applier decides on them
    )
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
    result = ApplyResult.starting(config.pipeline_id, config.start, lake_position, consistent=consistent)
    result.end_gtids, result.already_applied = end, True
    return result


def _admit(
    config: ApplyConfig,
    lake: LakeState,
    endpoint: MySqlEndpoint,
    sink: Sink,
    position: GtidSet,
    stop_requested: threading.Event | None,
    caught_up: dict[str, GtidSet],
    snapshots: dict[str, SnapshotProgress | None],
    stops: list[TableEvolution],
) -> Admission:
    """Admit the configured tables to the pipeline; its snapshot progress is for the filter, and
    ``stops`` gets the tables a catch-up stopped."""

    def catch_up(
        ref: TableRef, progress: SnapshotProgress | None, reflected: GtidSet, target: GtidSet, key: str
    ) -> GtidSet | None:
        end = _catch_up_joining_table(
            config, lake, endpoint, ref, progress, reflected, target, stop_requested, key, stops
        )
        if end is not None:
            caught_up[str(ref)] = end
        return end

    admission = admit_tables(
        config.tables,
        lake=lake,
        position=position,
        members=sink.members,
        first_run=sink.is_new,
        catch_up=catch_up,
        snapshots=snapshots,
        resume=config.resume,
    )
    if admission.members != sink.members:
        sink.record_members(admission.members)
    for name in admission.resumed:
        target = lake.target(TableRef.parse(name))
        if target is not None:
            clear_pause(target)
        log.info("%s resumed: caught up to the pipeline's position and streamed again", name)
    return admission


def _pause(config: ApplyConfig, lake: LakeState, sink: Sink, position: GtidSet) -> None:
    """Take the member tables ``config.pause`` names out of the stream at ``position`` (module doc, 4)."""
    members = sink.members
    if not config.pause or members is None:
        return
    remaining = dict(members)
    for name in config.pause:
        ref = TableRef.parse(name)
        if str(ref) not in remaining:
            continue  # paused by an earlier attempt of this run (or never streamed: refused upstream)
        target = lake.target(ref)
        if target is None:
            continue  # joined without a snapshot and never written: nothing to freeze
        mark = PauseMark(
            str(ref),
            str(position),
            remaining.pop(str(ref)),
            config.run_id,
            datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        )
        mark_paused(target, mark)
        log.info("%s paused: its lake copy stays as of %s until a run resumes it", ref, position or "(empty)")
    if remaining != members:
        sink.record_members(remaining)


def _catch_up_joining_table(
    config: ApplyConfig,
    lake: LakeState,
    endpoint: MySqlEndpoint,
    ref: TableRef,
    progress: SnapshotProgress | None,
    reflected: GtidSet,
    pipeline_position: GtidSet,
    stop_requested: threading.Event | None,
    key: str,
    stops: list[TableEvolution],
) -> GtidSet | None:
    """Read ``ref`` alone from what it ``reflected`` up to the pipeline's position; returns where it
    ended, or None when the table was stopped (added to ``stops``): it does not join.

    Its own state table (and pipeline id) keeps the pipeline's lease and position untouched; its stop
    rule never passes ``pipeline_position ∪ reflected`` and takes nothing outside it.
    """
    store = join_state(lake, ref, key)
    join_sink = delta_sink(config, lake.of_pipeline(store.pipeline_id), store.path, (str(ref),))
    start = join_sink.open(reflected)
    if join_sink.stopped_at_open:  # changed by another writer since its snapshot: nothing to catch up
        join_sink.release()
        stops.extend(join_sink.stopped_at_open)
        return None
    read = Read(
        tables=(str(ref),),
        start=start,
        stop_rule=WithinGtidSet(pipeline_position | reflected),
        snapshots={str(ref): progress},
    )
    result = ApplyResult.starting(store.pipeline_id, reflected, start, sink_epoch=join_sink.epoch)
    result = read_into_sink(
        read, config, endpoint, join_sink, result, started=time.monotonic(), stop_requested=stop_requested
    )
    stops.extend(result.stopped)
    return None if result.stopped else result.end_gtids
