"""A run's segment plan: which tables it snapshots, and the GTID set its segment starts from.

Invariant: a run that applies starts its segment either at the chain's checkpoint (the lake holds
every transaction before it) or, when it snapshots every table (a first run, or a re-snapshot after
purged binlogs), at the stream start of the snapshots it just took. Never anywhere else: a start
after the checkpoint would skip transactions of the tables already in the lake, a start before it
would apply transactions twice.

The plan (:class:`SegmentPlan`) says which of the two it is: ``start`` holds the checkpoint, or None
for "the snapshots' stream start". The empty set is a real start (a source that had executed
nothing when the pipeline began), not "unknown"; :meth:`SegmentPlan.segment_start` turns the plan
and the snapshot step's result into the set. The plan is typed from the run's origin
(:class:`RunOrigin`) to the segment's start; its JSON form is only the XCom ``plan``. Guarded by
tests/unit/airflow/runs/test_segment.py and, end to end, tests/integration/test_pipeline_dag.py
and test_pipeline_dag_recovery.py (the rebase).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.errors import NextStep
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.table_standing import TableStanding, judge_table
from airflow_mysql_cdc.engine.snapshot.result import SnapshotResult
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.hooks.next_steps import with_next_step
from airflow_mysql_cdc.runs import lake
from airflow_mysql_cdc.runs.actions import RunActionError, RunActions

log = logging.getLogger(__name__)


class SegmentStartUnknownError(AirflowFailException):
    """The plan starts the segment at the snapshots' stream start, but no snapshot was taken."""


@dataclass(frozen=True)
class RunOrigin:
    """Where a run that applies comes from: the chain's checkpoint, or nothing (a first run)."""

    checkpoint: GtidSet | None
    """None: the pipeline's first run into an empty lake, which snapshots every table."""
    members: Mapping[str, str] = field(default_factory=dict)
    """The tables the pipeline streams, each with the snapshot it joined with."""

    @property
    def first_run(self) -> bool:
        return self.checkpoint is None


@dataclass(frozen=True)
class SegmentPlan:
    """Which tables a run snapshots, and where its segment starts (module docstring)."""

    tables: tuple[str, ...]
    restart: bool = False
    """Snapshot them again from scratch (a finished snapshot is not kept)."""
    rebase: bool = False
    """Move the pipeline to the segment's start (purged binlogs, a ``rebase_checkpoint``)."""
    keep_members: bool = False
    """A confirmed rebase: every member table stays one at the new start."""
    start: GtidSet | None = None
    """The segment's start; None: the stream start of the snapshots this run takes."""

    def to_xcom(self) -> JsonObject:
        return {
            "tables": list(self.tables),
            "restart": self.restart,
            "rebase": self.rebase,
            "keep_members": self.keep_members,
            "start_gtids": str(self.start) if self.start is not None else None,
        }

    @classmethod
    def from_xcom(cls, data: Mapping[str, Any]) -> SegmentPlan:
        start = data.get("start_gtids")
        return cls(
            tuple(data.get("tables") or ()),
            bool(data.get("restart")),
            bool(data.get("rebase")),
            bool(data.get("keep_members")),
            GtidSet.parse(start) if start is not None else None,
        )

    def segment_start(self, snapshot: SnapshotResult) -> GtidSet:
        """Where the run's segment starts: the plan's start if it has one (the checkpoint, even the
        empty set), else the stream start of the snapshots this run took (``snapshot``: the snapshot
        step's result). :class:`SegmentStartUnknownError` when it has neither: no position keeps every
        table exact, so nothing is applied."""
        if self.start is not None:
            return self.start
        if snapshot.tables:
            return snapshot.stream_start
        raise SegmentStartUnknownError(
            "this run's segment starts where its snapshots start streaming (a first run, or every table "
            f"snapshotted again after purged binlogs), but the run took no snapshot (plan: tables "
            f"{list(self.tables)}), so it has no start: nothing was applied. Name at least one "
            "schema.table in the replicate task's tables; if it names some, the snapshot step "
            "returned no table: report it with this task's log."
        )


@dataclass(frozen=True)
class _Lake:
    """Where the plan reads the lake's marks and snapshots (through :mod:`.lake`)."""

    root: str
    storage_options: dict[str, str] | None

    def progress(self, name: str) -> Any:
        return lake.snapshot_progress(self.root, TableRef.parse(name), self.storage_options)


def plan_segment(
    origin: RunOrigin,
    tables: Sequence[str],
    lake_root: str,
    storage_options: dict[str, str] | None = None,
    *,
    resnapshot_needed: bool = False,
    absent: frozenset[str] = frozenset(),
    actions: RunActions | None = None,
) -> SegmentPlan:
    """Which tables this run snapshots, and where its segment starts (the XCom ``plan``).

    - first run: every table (a finished snapshot is kept, an unfinished one resumed); the segment
      starts at the snapshots' stream start;
    - binlogs purged (``resnapshot_needed``, ``on_purged="resnapshot"``): every table again, and
      the pipeline is rebased onto the new snapshots' stream start;
    - otherwise: tables that are not members of the pipeline and have no snapshot taken after the
      checkpoint (the binlog application then joins them, see ``table_admission``); the segment
      starts at the checkpoint. A table that is gone (``absent`` from the server, marked in the lake
      as dropped or renamed away: :func:`~airflow_mysql_cdc.engine.mysql.table_standing.judge_table`)
      is not snapshotted: there is nothing to snapshot. A table the binlog application *stopped*
      (its lake copy was found wrong: docs/operations.md, "A table stopped") is not snapshotted
      either, with a WARNING every run, until the run's conf asks for its re-snapshot: a wrong
      table is never replaced without someone having looked at why.

    The run's ``actions`` (:mod:`.actions`) add to it: tables to re-snapshot whole (``restart``), a
    paused table stays out (not snapshotted) unless the run resumes it (it is then caught up, not
    snapshotted), and a ``rebase_checkpoint`` starts the segment at its set (confirmed: the tables
    stay members there, ``keep_members``) or at the snapshots of every table.
    """
    actions = actions or RunActions()
    names = tuple(str(TableRef.parse(t)) for t in tables)
    every = _every_table_again(origin, names, resnapshot_needed, actions)
    if every is not None:
        return every
    assert origin.checkpoint is not None
    where = _Lake(lake_root, storage_options)
    to_snapshot = [name for name in names if _snapshots(name, origin, where, absent, actions)]
    restart = any(name in actions.whole_tables or _snapshotted_before(name, where) for name in to_snapshot)
    if to_snapshot:
        log.info("tables to snapshot before they join the pipeline: %s", ", ".join(to_snapshot))
    if actions.confirmed_rebase:
        assert actions.rebase_checkpoint is not None
        log.warning(
            "rebase_checkpoint (confirmed): the pipeline moves from %s to %s, every table staying a member",
            origin.checkpoint or "(empty)",
            actions.rebase_checkpoint,
        )
        return SegmentPlan(tuple(to_snapshot), restart, True, True, actions.rebase_checkpoint)
    return SegmentPlan(tuple(to_snapshot), restart, start=origin.checkpoint)


def _every_table_again(
    origin: RunOrigin, names: tuple[str, ...], resnapshot_needed: bool, actions: RunActions
) -> SegmentPlan | None:
    """The plan of a run that snapshots every table (a first run, purged binlogs, an unconfirmed
    rebase), starting at their stream start; None for a run that starts at its checkpoint."""
    if origin.first_run:
        if actions.pause or actions.resume or actions.rebase_checkpoint is not None:
            raise RunActionError(
                "this is the pipeline's first run: it snapshots every table, so there is nothing to pause, "
                "resume or rebase yet. Trigger the run without a conf, then act on later runs."
            )
        return SegmentPlan(names)
    if resnapshot_needed:
        log.warning("binlogs needed were purged: every table is snapshotted again (on_purged=resnapshot)")
        return SegmentPlan(names, restart=True, rebase=True)
    if actions.rebase_checkpoint is not None and not actions.confirmed_rebase:
        log.warning(
            "rebase_checkpoint: every table is snapshotted again and the pipeline continues from them"
        )
        return SegmentPlan(names, restart=True, rebase=True)
    return None


def _snapshots(
    name: str, origin: RunOrigin, where: _Lake, absent: frozenset[str], actions: RunActions
) -> bool:
    """Whether a run starting at ``origin``'s checkpoint snapshots ``name`` (plan_segment's list)."""
    assert origin.checkpoint is not None
    if name in actions.whole_tables:
        return not _taken_by_this_run(where.progress(name), origin.checkpoint, origin.members.get(name))
    if name in origin.members:
        if name in actions.resume:
            log.info("resume: %s is streamed (not paused); nothing to do for it", name)
        return False
    if _stays_paused(name, where, actions) or _stays_stopped(name, where):
        return False
    if name in actions.pause:
        raise RunActionError(
            f"pause: {name} is not streamed by the pipeline yet (it has not joined: no snapshot of it "
            "has been caught up). Nothing was done; let a run join it first."
        )
    if name in absent and _gone(name, where):
        return False
    progress = where.progress(name)
    # Snapshotted after the checkpoint (an earlier attempt of this run): it joins as it is.
    taken = progress is not None and progress.complete and origin.checkpoint.issubset(progress.stream_start)
    return not taken


def _snapshotted_before(name: str, where: _Lake) -> bool:
    """The table has a finished snapshot its new one replaces (so the snapshot step restarts)."""
    progress = where.progress(name)
    return progress is not None and progress.complete


def _taken_by_this_run(progress: Any, checkpoint: GtidSet, member_snapshot: str | None) -> bool:
    """A re-snapshot an earlier attempt of this run finished and the pipeline has not joined yet."""
    return (
        progress is not None
        and progress.complete
        and progress.snapshot_id != member_snapshot
        and checkpoint.issubset(progress.stream_start)
    )


def _stays_paused(name: str, where: _Lake, actions: RunActions) -> bool:
    """A paused table (its mark holds for its latest snapshot) is not snapshotted: it stays out, or
    the run resumes it by a catch-up."""
    mark = lake.pause(where.root, TableRef.parse(name), where.storage_options)
    if mark is None:
        return False
    progress = where.progress(name)
    if not mark.holds_for(progress.snapshot_id if progress is not None else ""):
        return False
    verb = "is caught up and streamed again" if name in actions.resume else "stays out"
    log.info("%s; it %s", mark.describe(), verb)
    return True


def _stays_stopped(name: str, where: _Lake) -> bool:
    """The table was stopped and no snapshot replaced it since: it stays out, saying so."""
    departure = lake.departure(where.root, TableRef.parse(name), where.storage_options)
    if departure is None or not departure.stopped:
        return False
    progress = where.progress(name)
    if not departure.holds_for(progress.snapshot_id if progress is not None else ""):
        return False
    log.warning(
        "not snapshotted unless the run's conf asks for it: %s",
        with_next_step(departure.describe(), NextStep.resnapshot(name)),
    )
    return True


def _gone(name: str, where: _Lake) -> bool:
    """A table absent from the server that the lake marks as dropped or renamed away."""
    departure = lake.departure(where.root, TableRef.parse(name), where.storage_options)
    left_at = departure.gtid if departure is not None else None
    if judge_table(on_source=False, left_at=left_at) is not TableStanding.GONE:
        return False
    assert departure is not None
    log.info("not snapshotted: %s; it no longer exists", departure.describe())
    return True
