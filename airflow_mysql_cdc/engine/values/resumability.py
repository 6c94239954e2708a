"""Can a pipeline resume from its checkpoint on this server? Pure set algebra over three sets.

Invariant: resuming from checkpoint ``C`` on a server with ``gtid_purged = P`` and
``gtid_executed = E`` is safe iff ``P ⊆ C`` and ``C ⊆ E``:

- ``P ⊆ C``: every transaction the server no longer has in its binlog was already applied. If
  ``P - C`` is not empty, those transactions are gone for good; waiting cannot bring them back,
  and the only way out is a re-snapshot. Starting a dump anyway would fail with error 1236 or,
  worse, skip them.
- ``C ⊆ E``: the server has every transaction we already applied. If ``C - E`` is not empty, the
  server is behind our lake (a point-in-time restore, or a failover to a lagging replica). A
  replica may still catch up, so this is worth waiting for; applying from here could otherwise
  replay a different history under GTIDs we consider done.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from airflow_mysql_cdc.engine.errors import NextStep
from airflow_mysql_cdc.engine.values.gtid import GtidSet


class Verdict(StrEnum):
    RESUMABLE = "resumable"
    BINLOG_PURGED = "binlog_purged"
    SERVER_BEHIND = "server_behind"


@dataclass(frozen=True)
class ResumabilityAssessment:
    verdict: Verdict
    checkpoint: GtidSet
    gtid_purged: GtidSet
    gtid_executed: GtidSet

    @property
    def purged_but_not_applied(self) -> GtidSet:
        return self.gtid_purged - self.checkpoint

    @property
    def applied_but_not_on_server(self) -> GtidSet:
        return self.checkpoint - self.gtid_executed

    @property
    def next_step(self) -> NextStep | None:
        """Re-snapshot every table when the binlog the checkpoint needs is purged (engine/errors.py)."""
        return NextStep.resnapshot() if self.verdict is Verdict.BINLOG_PURGED else None

    @property
    def message(self) -> str:
        if self.verdict is Verdict.BINLOG_PURGED:
            return (
                f"cannot resume from the checkpoint: the server purged binlogs holding transactions "
                f"that were never applied: {self.purged_but_not_applied}. They cannot be read any more. "
                "Re-snapshot the tables (or set on_purged='resnapshot' so a run does it when it meets this), "
                "and raise binlog retention so the next run's checkpoint stays readable."
            )
        if self.verdict is Verdict.SERVER_BEHIND:
            return (
                f"the server lacks transactions the lake already applied: {self.applied_but_not_on_server}. "
                "It was restored to an earlier point, or this is a replica that is behind. If it is a "
                "lagging replica, wait for it to catch up; otherwise point the connection at the server "
                "that has these transactions, or re-snapshot."
            )
        return f"resumable: checkpoint {self.checkpoint or '(empty)'} is readable on this server"

    def to_dict(self) -> dict[str, str | bool]:
        return {
            "verdict": self.verdict.value,
            "resumable": self.verdict is Verdict.RESUMABLE,
            "resnapshot_needed": self.verdict is Verdict.BINLOG_PURGED,
            "checkpoint": str(self.checkpoint),
            "gtid_purged": str(self.gtid_purged),
            "gtid_executed": str(self.gtid_executed),
            "missing_from_binlog": str(self.purged_but_not_applied),
            "missing_from_server": str(self.applied_but_not_on_server),
            "message": self.message,
        }


def assess_resumability(
    checkpoint: GtidSet, gtid_purged: GtidSet, gtid_executed: GtidSet
) -> ResumabilityAssessment:
    """Purged is judged first: if binlogs are gone, no amount of waiting helps."""
    if not gtid_purged.issubset(checkpoint):
        verdict = Verdict.BINLOG_PURGED
    elif not checkpoint.issubset(gtid_executed):
        verdict = Verdict.SERVER_BEHIND
    else:
        verdict = Verdict.RESUMABLE
    return ResumabilityAssessment(verdict, checkpoint, gtid_purged, gtid_executed)
