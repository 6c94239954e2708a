"""A run's segment plan: which tables it snapshots, and the GTID set its segment starts from.

Invariant: a run that applies starts its segment either at the chain's checkpoint (the lake holds
every transaction before it) or, when it snapshots every table (a first run, or a re-snapshot after
purged binlogs), at the stream start of the snapshots it just took. Never anywhere else: a start
after the checkpoint would skip transactions of the tables already in the lake, a start before it
would apply transactions twice.

The plan says which of the two it is: ``start_gtids`` holds the checkpoint's text, or None for "the
snapshots' stream start". An empty string is the empty GTID set, a real start (a source that had
executed nothing when the pipeline began), not "unknown"; :func:`segment_start` turns the plan and
the snapshot step's result into the set. Guarded by tests/unit/airflow/runs/test_segment.py and,
end to end, tests/integration/test_pipeline_dag.py and test_pipeline_dag_recovery.py (the rebase).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.table_standing import TableStanding, judge_table
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.runs import lake
from airflow_mysql_cdc.runs.actions import RunActionError, RunActions

log = logging.getLogger(__name__)


class SegmentStartUnknownError(AirflowFailException):
    """The plan starts the segment at the snapshots' stream start, but no snapshot was taken."""


def plan_segment(
    loaded: dict[str, Any],
    resumability: dict[str, Any] | None,
    tables: Sequence[str],
    lake_root: str,
    storage_options: dict[str, str] | None = None,
    absent: frozenset[str] = frozenset(),
    actions: RunActions | None = None,
) -> dict[str, Any]:
    """Which tables this run snapshots, and where its segment starts (the XCom ``plan``).

    - first run: every table (a finished snapshot is kept, an unfinished one resumed); the segment
      starts at the snapshots' stream start (``start_gtids`` None);
    - binlogs purged and ``on_purged="resnapshot"``: every table again, and the pipeline is
      rebased onto the new snapshots' stream start (``start_gtids`` None);
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
    names = [str(TableRef.parse(t)) for t in tables]
    plain = {"restart": False, "rebase": False, "keep_members": False}
    if loaded["first_run"]:
        if actions.pause or actions.resume or actions.rebase_checkpoint is not None:
            raise RunActionError(
                "this is the pipeline's first run: it snapshots every table, so there is nothing to pause, "
                "resume or rebase yet. Trigger the run without a conf, then act on later runs."
            )
        return {**plain, "tables": names, "start_gtids": None}
    if resumability and resumability.get("resnapshot_needed"):
        log.warning("binlogs needed were purged: every table is snapshotted again (on_purged=resnapshot)")
        return {**plain, "tables": names, "restart": True, "rebase": True, "start_gtids": None}
    if actions.rebase_checkpoint is not None and not actions.confirmed_rebase:
        log.warning(
            "rebase_checkpoint: every table is snapshotted again and the pipeline continues from them"
        )
        return {**plain, "tables": names, "restart": True, "rebase": True, "start_gtids": None}
    checkpoint = GtidSet.parse(loaded["checkpoint"])
    members = loaded.get("members") or {}
    forced = set(actions.whole_tables)
    to_snapshot: list[str] = []
    restart = False
    for name in names:
        if name in forced:
            progress = lake.snapshot_progress(lake_root, TableRef.parse(name), storage_options)
            if _taken_by_this_run(progress, checkpoint, members.get(name)):
                continue
            to_snapshot.append(name)
            restart = True
            continue
        if name in members:
            _check_member_action(name, actions)
            continue
        mark = lake.pause(lake_root, TableRef.parse(name), storage_options)
        if mark is not None:
            progress = lake.snapshot_progress(lake_root, TableRef.parse(name), storage_options)
            if mark.holds_for(progress.snapshot_id if progress is not None else ""):
                verb = "is caught up and streamed again" if name in actions.resume else "stays out"
                log.info("%s; it %s", mark.describe(), verb)
                continue
        if _stays_stopped(name, lake_root, storage_options):
            continue
        if name in actions.pause:
            raise RunActionError(
                f"pause: {name} is not streamed by the pipeline yet (it has not joined: no snapshot of it "
                "has been caught up). Nothing was done; let a run join it first."
            )
        if name in absent:
            departure = lake.departure(lake_root, TableRef.parse(name), storage_options)
            left_at = departure.gtid if departure is not None else None
            if judge_table(on_source=False, left_at=left_at) is TableStanding.GONE:
                assert departure is not None
                log.info("not snapshotted: %s; it no longer exists", departure.describe())
                continue
        progress = lake.snapshot_progress(lake_root, TableRef.parse(name), storage_options)
        if progress is not None and progress.complete and checkpoint.issubset(progress.stream_start):
            continue  # snapshotted after the checkpoint (an earlier attempt of this run): joins as it is
        to_snapshot.append(name)
        restart |= progress is not None and progress.complete
    if to_snapshot:
        log.info("tables to snapshot before they join the pipeline: %s", ", ".join(to_snapshot))
    if actions.confirmed_rebase:
        assert actions.rebase_checkpoint is not None
        log.warning(
            "rebase_checkpoint (confirmed): the pipeline moves from %s to %s, every table staying a member",
            loaded["checkpoint"] or "(empty)",
            actions.rebase_checkpoint,
        )
        return {
            **plain,
            "tables": to_snapshot,
            "restart": restart,
            "rebase": True,
            "keep_members": True,
            "start_gtids": str(actions.rebase_checkpoint),
        }
    return {**plain, "tables": to_snapshot, "restart": restart, "start_gtids": loaded["checkpoint"]}


def _taken_by_this_run(progress: Any, checkpoint: GtidSet, member_snapshot: str | None) -> bool:
    """A re-snapshot an earlier attempt of this run finished and the pipeline has not joined yet."""
    return (
        progress is not None
        and progress.complete
        and progress.snapshot_id != member_snapshot
        and checkpoint.issubset(progress.stream_start)
    )


def _stays_stopped(name: str, lake_root: str, storage_options: dict[str, str] | None) -> bool:
    """The table was stopped and no snapshot replaced it since: it stays out, saying so."""
    ref = TableRef.parse(name)
    departure = lake.departure(lake_root, ref, storage_options)
    if departure is None or not departure.stopped:
        return False
    progress = lake.snapshot_progress(lake_root, ref, storage_options)
    if not departure.holds_for(progress.snapshot_id if progress is not None else ""):
        return False
    log.warning("not snapshotted unless the run's conf asks for it: %s", departure.describe())
    return True


def _check_member_action(name: str, actions: RunActions) -> None:
    """A member (streamed) table asked to resume is streamed already: a retried run's resume did it."""
    if name in actions.resume:
        log.info("resume: %s is streamed (not paused); nothing to do for it", name)


def segment_start(plan: Mapping[str, Any], snapshot: Mapping[str, Any]) -> GtidSet:
    """Where the run's segment starts: the plan's start set if it has one (the checkpoint, even the
    empty set), else the stream start of the snapshots this run took (a first run, a rebase).

    Raises :class:`SegmentStartUnknownError` when the plan leaves the start to the snapshots but
    none was taken: there is no position that keeps every table exact, so nothing is applied.
    """
    planned = plan.get("start_gtids")
    if planned is not None:
        return GtidSet.parse(planned)
    if snapshot.get("tables"):
        return GtidSet.parse(snapshot.get("stream_start") or "")
    raise SegmentStartUnknownError(
        "this run's segment starts where its snapshots start streaming (a first run, or every table "
        f"snapshotted again after purged binlogs), but the run took no snapshot (plan: tables "
        f"{list(plan.get('tables') or [])}), so it has no start: nothing was applied. Name at least "
        "one schema.table in the replicate task's tables; if it names some, the snapshot step "
        "returned no table: report it with this task's log."
    )
