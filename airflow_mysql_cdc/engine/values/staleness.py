"""A stale position: the server has moved on and the pipeline's checkpoint has not, for too long.

Invariant: a position is stale only when both hold, so an idle source never raises the alarm:

- the server executed transactions the checkpoint lacks (``gtid_executed - checkpoint`` is not
  empty), and
- the chain's head record (the checkpoint this run resumes from) covers data only up to its
  ``segment_end``, longer ago than ``stale_after``.

The head's ``segment_end`` is the right clock: the record proves the lake held every transaction
committed before it (a run on an idle server still publishes a record, with the same end set and a
later segment end). So ``now - segment_end`` bounds how long the unapplied transactions have waited,
however many runs failed, were skipped or never ran (a paused DAG). In a healthy pipeline it is
about one schedule interval. Guarded by ``tests/unit/test_stale_position.py``.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.headroom import format_duration


@dataclass(frozen=True)
class StalenessAssessment:
    stale: bool
    behind_s: float | None
    """Seconds since the head record's segment end when the server has moved on; None otherwise."""
    waiting: GtidSet
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "stale": self.stale,
            "behind_s": None if self.behind_s is None else round(self.behind_s),
            "waiting_transactions": self.waiting.count(),
            "message": self.message,
        }


def judge_staleness(
    checkpoint: GtidSet,
    gtid_executed: GtidSet,
    checkpoint_segment_end: datetime.datetime | None,
    now: datetime.datetime,
    stale_after: datetime.timedelta | None,
) -> StalenessAssessment:
    waiting = gtid_executed - checkpoint
    if waiting.is_empty():
        return StalenessAssessment(
            False, None, waiting, "the checkpoint holds every transaction of the server"
        )
    if checkpoint_segment_end is None:
        return StalenessAssessment(
            False,
            None,
            waiting,
            f"{waiting.count()} transaction(s) to apply; the checkpoint's age is unknown",
        )
    behind = (now - checkpoint_segment_end).total_seconds()
    summary = (
        f"the checkpoint covers data up to {checkpoint_segment_end:%Y-%m-%d %H:%M:%S} UTC "
        f"({format_duration(behind)} ago) and the server has {waiting.count()} transaction(s) it lacks"
    )
    if stale_after is None or behind <= stale_after.total_seconds():
        return StalenessAssessment(False, behind, waiting, summary)
    return StalenessAssessment(
        True,
        behind,
        waiting,
        f"stale position: {summary}, more than stale_after_hours "
        f"({format_duration(stale_after.total_seconds())}). "
        "No run has advanced the checkpoint for that long: look at why runs fail or do not start, and "
        "mind the binlog headroom: once the checkpoint's binlog is purged, every table must be "
        "re-snapshotted.",
    )
