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

Pure rules over records and dates, unit-tested in ``tests/unit/test_run_placement.py``.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.lake.checkpoint_log import interval_key
from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord

PlacementKind = Literal["first", "forward", "rerun", "covered", "before_first"]


class RunBeforeFirstIntervalError(CdcError, RuntimeError):
    """A run dated before the pipeline's first published interval: nothing there to continue."""


@dataclass(frozen=True)
class Placement:
    kind: PlacementKind
    record: CheckpointRecord | None
    """forward: the head it continues; rerun: its own record; covered: the record covering it."""

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
            return (
                f"continues run {record.run_id} (interval ending {record.segment_end}, end set "
                f"{record.end_gtids or '(empty)'})"
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
    records: Sequence[CheckpointRecord], interval_end: datetime.datetime | str, run_id: str | None = None
) -> Placement:
    """The placement of a run of the interval ending ``interval_end`` (records: any order).

    ``run_id`` is the run's own id: a record covering its interval that this very run published
    (it caught a backlog up past its interval end, then was cleared) makes it a re-run of its own
    record, not a run "inside the segment of" itself.
    """
    key = interval_key(interval_end)
    ordered = sorted(
        (record for record in records if record.segment_end), key=lambda r: interval_key(r.segment_end or "")
    )
    if not ordered:
        return Placement("first", None)
    for record in ordered:
        if interval_key(record.segment_end or "") == key:
            return Placement("rerun", record)
    head = ordered[-1]
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
    if run_id is not None and covering.run_id == run_id:
        return Placement("rerun", covering)
    return Placement("covered", covering)
