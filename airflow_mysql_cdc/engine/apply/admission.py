"""Which tables a run may stream: a table joins the pipeline only once its lake copy fits the position.

The pipeline streams from its position ``R`` (the GTID set every member table reflects). A table
that is not yet a member (added to the configuration, or re-snapshotted since it joined) reflects
something else: for each snapshot chunk with high watermark ``H``, the snapshot as of ``H``, plus
``J``, whatever a catch-up applied after the snapshot (``J`` is the snapshot's stream start when
no catch-up ran). The stream started at ``R`` applies to that chunk every transaction outside
``R ∪ H`` (the snapshot filter drops those in ``H``). So the chunk

- misses ``(R − H) − J``: transactions the pipeline has passed but the table never received;
- receives twice ``(J − H) − R``: transactions the catch-up applied that the stream applies again.

A table joins when both are empty for every chunk (:func:`join_gap`). A table snapshotted after
the pipeline's position (the usual case: snapshot, then stream) passes at once, because
``R ⊆ stream start ⊆ H``. A table snapshotted *before* the position (the pipeline ran on while
the snapshot was taken, or the snapshot was taken earlier) misses transactions: it is caught up
first, by a read of only that table from ``J`` that never passes ``R`` (:class:`WithinGtidSet`),
written under its own state so the pipeline's state and lease are untouched. The catch-up then
leaves ``J = J ∪ R``, which closes the gap. A table without any snapshot joins only the first run
of a pipeline (it is then streamed from the pipeline's start, the user's choice); later it needs
a snapshot, or its older rows would silently be missing.

A table an operator *paused* (:mod:`~airflow_mysql_cdc.engine.lake.pauses`) reflects exactly its
mark's position ``P``: it stays out while the mark holds, and a *resume* joins it with ``J = P``
(every chunk's ``H`` is older, so only ``(R − P)`` is missing), caught up by the same read of that
table alone, under a catch-up state of its own for that resume.

A table the lake marks *stopped* (its copy was found wrong: :mod:`~airflow_mysql_cdc.engine.lake.batch_check`,
:mod:`~airflow_mysql_cdc.engine.lake.outside_changes`) stays out, paused or not, until a snapshot
replaces it; every run says so in a WARNING and lists it in ``Admission.stopped``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from airflow_mysql_cdc.engine.errors import LakeMismatchError, NextStep
from airflow_mysql_cdc.engine.lake.pauses import PauseMark
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineStateStore
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.table_standing import TableStanding, judge_table
from airflow_mysql_cdc.engine.snapshot.lake_commits import (
    SnapshotProgress,
    read_snapshot_progress,
)
from airflow_mysql_cdc.engine.values.gtid import GtidSet

log = logging.getLogger("airflow_mysql_cdc.apply")


class TableAdmissionError(LakeMismatchError, RuntimeError):
    """A table cannot join the pipeline at its position without losing or doubling transactions."""


@dataclass(frozen=True)
class JoinGap:
    missing: GtidSet
    doubled: GtidSet

    @property
    def closed(self) -> bool:
        return self.missing.is_empty() and self.doubled.is_empty()


def join_gap(position: GtidSet, reflected: GtidSet, high_watermarks: Iterable[GtidSet]) -> JoinGap:
    """What a table would miss and receive twice if the stream started at ``position`` (module doc)."""
    missing = GtidSet()
    doubled = GtidSet()
    seen: set[str] = set()
    for high in high_watermarks:
        text = str(high)
        if text in seen:
            continue
        seen.add(text)
        missing |= (position - high) - reflected
        doubled |= (reflected - high) - position
    return JoinGap(missing, doubled)


def join_pipeline_id(pipeline_id: str, ref: TableRef, snapshot_id: str) -> str:
    return f"{pipeline_id}:join:{ref}:{snapshot_id}"


def join_state(lake: LakeState, ref: TableRef, snapshot_id: str) -> PipelineStateStore:
    """The state of a table's catch-up: its own table, so the pipeline's lease is not involved."""
    path = lake.layout.join_state(ref.schema, ref.table, snapshot_id)
    return lake.pipeline_store(path, join_pipeline_id(lake.pipeline_id, ref, snapshot_id))


@dataclass(frozen=True)
class Admission:
    members: dict[str, str]
    """Table -> snapshot id it joined with ("" without one): the pipeline's members from now on."""
    snapshots: dict[str, SnapshotProgress | None]
    """The snapshot progress read for each table, for the stream's filter to reuse."""
    paused: tuple[str, ...] = ()
    """Tables left out because an operator paused them (their marks hold)."""
    resumed: tuple[str, ...] = ()
    """Paused tables that joined again in this admission (their marks are to be cleared)."""
    stopped: dict[str, str] = field(default_factory=dict)
    """Tables left out because the lake marks them stopped, with what to tell the user."""


CatchUp = Callable[[TableRef, SnapshotProgress | None, GtidSet, GtidSet, str], GtidSet | None]
"""(table, its snapshot, what it reflects, the pipeline position, the catch-up's state key) -> what it
reflects afterwards (None: the catch-up stopped the table, which then does not join). The key is the
snapshot's id, or for a resume, one of its own (:func:`resume_key`)."""


def resume_key(snapshot_id: str, paused_at: str) -> str:
    """The catch-up state key of one resume: a later pause and resume of the same snapshot gets another."""
    stamp = "".join(character for character in paused_at if character.isalnum())
    return f"{snapshot_id or 'nosnapshot'}-resume-{stamp}"


def read_snapshots(tables: Sequence[str], lake: LakeState) -> dict[str, SnapshotProgress | None]:
    """Each table's latest snapshot progress (None: never snapshotted), read once per run."""
    return {str(ref): read_snapshot_progress(lake, ref) for ref in (TableRef.parse(name) for name in tables)}


def consistent_point(
    snapshots: Mapping[str, SnapshotProgress | None], rebased: Mapping[str, str] | None = None
) -> GtidSet:
    """The smallest position at which every one of these tables is exact (empty: any position).

    A run may end only at a position containing it: before, some snapshot chunk still reflects a
    later state of the source than the position (the first run of a pipeline, a table that joins).
    It is recorded with the snapshots, so every retry of a run computes the same one. ``rebased``
    (table -> snapshot id) names snapshots an operator's confirmed rebase vouched for on another
    history (:mod:`~airflow_mysql_cdc.engine.lake.rebases`): they bound nothing.
    """
    point = GtidSet()
    for table, progress in snapshots.items():
        if progress is not None and (rebased or {}).get(table) != progress.snapshot_id:
            point |= progress.consistent_point
    return point


def admit_tables(
    tables: Sequence[str],
    *,
    lake: LakeState,
    position: GtidSet,
    members: dict[str, str] | None,
    first_run: bool,
    catch_up: CatchUp,
    snapshots: Mapping[str, SnapshotProgress | None] | None = None,
    resume: Iterable[str] = (),
) -> Admission:
    """The pipeline's members for a run of ``tables`` from ``position``, catching tables up as needed.

    ``lake`` is the pipeline's (its id names it). ``members`` is what the pipeline's state records
    (None: a state from before membership was recorded, whose tables are all taken as members).
    ``snapshots`` holds progress already read
    (:func:`read_snapshots`); tables missing from it are read here. ``resume`` names paused tables
    to join again (the rest of the paused stay out).
    """
    admitted: dict[str, str] = {}
    paused: list[str] = []
    resumed: list[str] = []
    stopped: dict[str, str] = {}
    resuming = {str(TableRef.parse(name)) for name in resume}
    known = snapshots or {}
    read: dict[str, SnapshotProgress | None] = {}
    for name in tables:
        ref = TableRef.parse(name)
        progress = known[str(ref)] if str(ref) in known else read_snapshot_progress(lake, ref)
        read[str(ref)] = progress
        snapshot_id = progress.snapshot_id if progress is not None else ""
        if members is None or members.get(str(ref)) == snapshot_id:
            admitted[str(ref)] = snapshot_id
            continue
        if _departed(ref, progress, lake, stopped):
            continue
        mark = lake.pause(ref)
        if mark is not None and mark.holds_for(snapshot_id):
            if str(ref) not in resuming:
                log.info("%s is not streamed: %s; resume it to catch it up", ref, mark.describe())
                paused.append(str(ref))
            elif _resume(ref, progress, mark, position, lake, catch_up):
                admitted[str(ref)] = snapshot_id
                resumed.append(str(ref))
            continue
        if progress is None:
            _refuse_without_snapshot(ref, members.get(str(ref)), first_run, lake.pipeline_id, position)
            admitted[str(ref)] = ""
            continue
        progress.require_complete(ref)
        _join(ref, progress, position, lake, catch_up)
        # Its catch-up may meet a DDL, or find the table changed by another writer (a stop).
        if not _departed(ref, progress, lake, stopped):
            admitted[str(ref)] = snapshot_id
    return Admission(admitted, read, tuple(paused), tuple(resumed), stopped)


def _refuse_without_snapshot(
    ref: TableRef, joined_with: str | None, first_run: bool, pipeline_id: str, position: GtidSet
) -> None:
    """A non-member table without a snapshot joins only a pipeline's first run (module doc)."""
    if joined_with:
        raise TableAdmissionError(
            f"{ref} is streamed by pipeline {pipeline_id!r} (it joined with snapshot "
            f"{joined_with}), but the lake no longer holds that snapshot's records: version 0.1 "
            "kept them in the table's Delta commit history, and a log clean-up deleted them before "
            "this version could move them. The rows are intact; only the record tying them to their "
            "watermarks is gone. Re-snapshot the table; the next run catches it up and streams it."
        ).then(NextStep.resnapshot(ref))
    if not first_run:
        raise TableAdmissionError(
            f"{ref} is not yet streamed by pipeline {pipeline_id!r} (which is at "
            f"{position or '(empty)'}) and has no snapshot in the lake: streaming it from here "
            "would leave out every row written before. Snapshot it first; the next run then catches "
            "it up and streams it."
        ).then(NextStep.resnapshot(ref))


def _resume(
    ref: TableRef,
    progress: SnapshotProgress | None,
    mark: PauseMark,
    position: GtidSet,
    lake: LakeState,
    catch_up: CatchUp,
) -> bool:
    """Catch a paused table up from its mark's position and join it; False if a DDL took it out."""
    key = resume_key(progress.snapshot_id if progress else "", mark.paused_at)
    _join(ref, progress, position, lake, catch_up, mark.reflected, key)
    return not _departed(ref, progress, lake)


def _departed(
    ref: TableRef,
    progress: SnapshotProgress | None,
    lake: LakeState,
    stopped: dict[str, str] | None = None,
) -> bool:
    """The table left the pipeline at a DDL after its latest snapshot (it waits for a new one), or
    the lake marks it stopped and no snapshot replaced it since (added to ``stopped``).

    The rule is :func:`~airflow_mysql_cdc.engine.mysql.table_standing.judge_table`, the one the
    prerequisites and the plan ask too; admission does not ask the source (it runs in Spark).
    """
    departure = lake.departure(ref)
    if departure is None:
        return False
    if departure.stopped:
        latest = progress.snapshot_id if progress is not None else ""
        standing = judge_table(on_source=None, stopped=departure.holds_for(latest))
    else:
        standing = judge_table(
            on_source=None,
            left_at=departure.gtid,
            snapshot_stream_start=progress.stream_start if progress is not None else None,
        )
    if not standing.out_of_the_pipeline:
        return False
    if standing is TableStanding.STOPPED:
        log.warning("%s is not streamed: %s", ref, departure.describe())
        if stopped is not None:
            stopped[str(ref)] = departure.describe()
        return True
    log.warning("%s is not streamed: %s; a new snapshot of it joins the pipeline", ref, departure.describe())
    return True


def _join(
    ref: TableRef,
    progress: SnapshotProgress | None,
    position: GtidSet,
    lake: LakeState,
    catch_up: CatchUp,
    paused_at: GtidSet | None = None,
    key: str | None = None,
) -> None:
    """Join ``ref`` at ``position``, catching it up first when needed; ``paused_at``: a paused table's
    mark position (what it reflects besides its catch-up), ``key``: its catch-up state's key."""
    # A table that joined without a snapshot (a pipeline's first run) has no chunks: one empty high
    # watermark stands for its rows, which reflect exactly what it was paused at.
    highs = [chunk.high_watermark for chunk in progress.done.values()] if progress else [GtidSet()]
    key = key or (progress.snapshot_id if progress else "")
    caught_up = join_state(lake, ref, key).read()
    assert paused_at is not None or progress is not None, "only a paused table joins without a snapshot"
    start = paused_at if paused_at is not None else progress.stream_start  # type: ignore[union-attr]
    reflected = start | (caught_up.applied_gtids if caught_up else GtidSet())
    gap = join_gap(position, reflected, highs)
    if not gap.missing.is_empty() and gap.doubled.is_empty():
        log.info(
            "%s joins the pipeline at %s but its snapshot reflects only %s: catching it up first",
            ref,
            position or "(empty)",
            reflected or "(empty)",
        )
        caught_up_to = catch_up(ref, progress, reflected, position, key)
        if caught_up_to is None:
            return  # stopped by its catch-up: it stays out (the caller finds its mark)
        reflected = caught_up_to
        gap = join_gap(position, reflected, highs)
    if not gap.doubled.is_empty():
        raise TableAdmissionError(
            f"{ref} cannot join pipeline {lake.pipeline_id!r} at {position or '(empty)'}: its lake copy "
            f"already reflects {gap.doubled}, which the pipeline has not applied, so streaming would "
            f"apply them twice. Re-snapshot the table to join at the pipeline's position."
        ).then(NextStep.resnapshot(ref))
    if not gap.missing.is_empty():
        raise TableAdmissionError(
            f"{ref} cannot join pipeline {lake.pipeline_id!r} at {position or '(empty)'}: its catch-up "
            f"ended at {reflected} and the table still lacks {gap.missing}. Rerun: the catch-up resumes."
        )
    log.info("%s joins the pipeline (snapshot %s)", ref, key)
