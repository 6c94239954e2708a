"""Where a DAG run stands in the checkpoint chain, decided from the published records alone.

Invariant: whatever order runs execute in (a failed run cleared days later, a backfill before,
inside or after existing runs, two runs of one backfill at once), each interval end gets at most one
record, every record continues the latest record published before it, and the lake never moves
backwards. A run of the interval ending ``T`` is:

- **first**: nothing was published yet; it snapshots and starts the chain;
- **forward**: ``T`` is after the chain's head ``H`` (the record with the latest interval end); it
  continues ``H``: its segment starts at ``H``'s end set and at ``H``'s interval end, so an interval
  whose run failed (and published nothing) is covered by the next successful run instead of holding
  every later run back (no ``depends_on_past``: a failed run with ``max_active_runs=1`` deadlocked
  the DAG once its successor took the only slot);
- **rerun**: ``T`` already has a record (a cleared or retried run, a backfill that reprocesses
  completed runs), or the record covering ``T`` is this run's own (a run that caught a backlog up
  past its interval end, cleared); it republishes that record, unchanged, and applies nothing;
- **covered**: ``T`` lies inside the segment of a later record (a failed run cleared after its
  successor covered it, a backfill inside the chain); it applies nothing, and says which record
  covers it;
- **before the first**: ``T`` is before the pipeline's first record; refused, since no chain exists
  there to continue (the first run snapshotted the tables as they were after it).

A run whose conf asks for actions (re-snapshot, pause, resume, rebase: the Airflow side's
``runs/actions.py``) would lose them as a covered run or a re-run of another run's record: those
apply nothing. So such a run **continues the head instead** (``overtaken``: a forward run whose
segment ends when it starts, after the head's) when

- it runs for the first time (never cleared): it was queued while another run covered its interval
  (the scar, issue 34: an action run triggered "now" was covered by a late scheduled run that caught
  up to three seconds after it, and its conf was refused; the advice "trigger a run dated after the
  last published one" cannot be followed while a catch-up runs), or
- the record covering it is the head: nothing was published since, so carrying its actions out now
  is what carrying them out when it was first placed would have been,

and the head's segment ended before the run acts (``acts_at``). A cleared run whose interval later
runs published past stays covered, and its conf is refused: its actions would happen far from where
they were asked. A record of the run itself always makes it a re-run: a retry after publishing.

Pure rules over records and dates, unit-tested in ``tests/unit/airflow/runs/test_run_placement.py``.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord, interval_key

PlacementKind = Literal["first", "forward", "rerun", "covered", "before_first"]


class RunBeforeFirstIntervalError(CdcError, RuntimeError):
    """A run dated before the pipeline's first published interval: nothing there to continue."""


@dataclass(frozen=True)
class Placement:
    kind: PlacementKind
    record: CheckpointRecord | None
    """forward: the head it continues; rerun: its own record; covered: the record covering it."""
    overtaken: CheckpointRecord | None = None
    """A forward run carrying actions whose interval this record covers (module doc): its segment
    ends after the head's, when the run starts, not at its interval end."""

    @property
    def applies(self) -> bool:
        """Whether the run reads the binlog and writes the lake (first and forward runs only)."""
        return self.kind in ("first", "forward")

    def describe(self, interval_end: str) -> str:
        record = self.record
        if self.kind == "first":
            return f"the pipeline's first run (interval ending {interval_end}): it snapshots the tables"
        assert record is not None
        if self.kind == "forward":
            continues = (
                f"continues run {record.run_id} (interval ending {record.segment_end}, end set "
                f"{record.end_gtids or '(empty)'})"
            )
            if self.overtaken is None:
                return continues
            return (
                f"{continues}, although its interval ending {interval_end} is inside the segment of run "
                f"{self.overtaken.run_id} ({self.overtaken.segment_start} to {self.overtaken.segment_end}): "
                "its conf asks for actions, so it carries them out from the head on, its segment ending "
                "when it starts"
            )
        if self.kind == "rerun":
            caught_up = interval_key(record.segment_end or "") != interval_key(interval_end)
            return (
                f"a re-run of the interval ending {interval_end}, published by run {record.run_id}"
                + (f" (which caught up to {record.segment_end})" if caught_up else "")
                + ": its record is republished unchanged and nothing is applied"
            )
        return (
            f"the interval ending {interval_end} is inside the segment of run {record.run_id} ("
            f"{record.segment_start} to {record.segment_end}, end set {record.end_gtids or '(empty)'}), "
            "published already: nothing to apply"
        )


def place_run(
    records: Sequence[CheckpointRecord],
    interval_end: datetime.datetime | str,
    run_id: str | None = None,
    *,
    acts_at: datetime.datetime | None = None,
    cleared: bool = False,
) -> Placement:
    """The placement of a run of the interval ending ``interval_end`` (records: any order).

    ``run_id`` is the run's own id: a record this very run published (it caught a backlog up past its
    interval end, or carried out its conf's actions past it, then was cleared or retried) makes it a
    re-run of its own record, not a run "inside the segment of" itself.

    ``acts_at``: the run's conf asks for actions, which it would carry out at this time; ``cleared``:
    the run was cleared since it was triggered. Together they decide whether a run that would apply
    nothing continues the head instead (module doc).
    """
    key = interval_key(interval_end)
    ordered = sorted(
        (record for record in records if record.segment_end), key=lambda r: interval_key(r.segment_end or "")
    )
    if not ordered:
        return Placement("first", None)
    own = next((record for record in ordered if run_id is not None and record.run_id == run_id), None)
    if own is not None:
        return Placement("rerun", own)
    head = ordered[-1]
    for record in ordered:
        if interval_key(record.segment_end or "") == key:
            return _carrying_actions(record, head, acts_at, cleared) or Placement("rerun", record)
    if key > interval_key(head.segment_end or ""):
        return Placement("forward", head)
    first = ordered[0]
    if key < interval_key(first.segment_end or ""):
        raise RunBeforeFirstIntervalError(
            f"this run's interval ends at {key}, before the pipeline's first interval (run {first.run_id}, "
            f"ending {first.segment_end}): the pipeline started there from a snapshot, so there is "
            "nothing before it to replicate or check. Backfill from the first interval on (airflow "
            f"backfill create --from-date {first.segment_end} ...); runs dated earlier are refused."
        )
    covering = next(record for record in ordered if interval_key(record.segment_end or "") > key)
    return _carrying_actions(covering, head, acts_at, cleared) or Placement("covered", covering)


def _carrying_actions(
    covering: CheckpointRecord, head: CheckpointRecord, acts_at: datetime.datetime | None, cleared: bool
) -> Placement | None:
    """A forward run continuing ``head``, for a run carrying actions whose interval ``covering``
    already holds, when the module doc's rule lets it; else None."""
    if acts_at is None or (cleared and covering is not head):
        return None
    if interval_key(acts_at) <= interval_key(head.segment_end or ""):
        return None  # the head's segment ends after the run would act: no later end to give it
    return Placement("forward", head, overtaken=covering)
