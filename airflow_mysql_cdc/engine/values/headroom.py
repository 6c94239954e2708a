"""Binlog retention headroom: how long the checkpoint's binlog file stays on the server. Pure arithmetic.

Invariant: the headroom is a *lower bound* on the time left before the server may purge the oldest
binlog file a resume from the checkpoint reads, so a warning can come early but never late:

- **Which file a resume reads.** A GTID dump starts in the newest binlog file whose
  ``Previous_gtids`` set is a subset of the requested set (MySQL's
  ``MYSQL_BIN_LOG::find_first_log_not_in_gtid_set`` scans the index newest to oldest and stops at the
  first such file). :func:`choose_needed_file` does the same, so files older than that one may go.
- **When it goes.** MySQL purges a closed file at a rotation (or restart) once the file's
  modification time is older than the expire period (``purge_logs_before_date``: ``st_mtime <
  now - binlog_expire_logs_seconds``). The active file is never purged before it is rotated. So the
  file stays until ``last_write + retention`` at least; :func:`headroom_seconds` returns that minus
  now. For the active file it returns the retention itself (as if rotated now; it can only grow).
- **Where the last write comes from.** A closed file's last write is its rotation, and the next
  file's Format_description event is written in the same second
  (:mod:`~airflow_mysql_cdc.engine.mysql.binlog_files` reads its timestamp; event times are whole
  seconds, so the bound errs by under a second on the safe side). After a server restart the next file
  starts when the server comes back, later than the last write by the downtime: then the headroom
  is too long by that downtime (said in docs/operations.md, "Binlog retention headroom").

What the numbers mean for a schedule is judged in :func:`judge_headroom`: below ``interval × runs``
the pipeline warns; a retention shorter than one interval fails the run (no checkpoint can be
counted on to survive from one run to the next). Guarded by ``tests/unit/test_binlog_headroom.py``.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from airflow_mysql_cdc.engine.errors import NextStep
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject

Platform = Literal["mysql", "rds", "aurora", "cloud_sql"]
HOUR_S = 3600


@dataclass(frozen=True)
class BinlogRetention:
    """How long the server keeps a closed binlog file after its last write, and where that was read."""

    platform: Platform
    seconds: int | None
    """Guaranteed seconds; None: binlogs are never purged automatically."""
    source: str
    """Where the value comes from, in words (a variable, a procedure, the pipeline configuration)."""
    known: bool = True
    """False when the server does not say (a managed platform whose setting is not visible from SQL):
    ``seconds`` is then the server variable's value at best, and the headroom is not judged."""
    note: str = ""

    def describe(self) -> str:
        if not self.known:
            return f"unknown ({self.source})"
        if self.seconds is None:
            return f"binlogs never purged automatically ({self.source})"
        return f"{format_duration(self.seconds)} ({self.source})"

    def raise_statement(self, seconds: int) -> str:
        """What an operator runs on this platform to keep binlogs for at least ``seconds``."""
        hours = max(1, math.ceil(seconds / HOUR_S))
        if self.platform in ("rds", "aurora"):
            return f"CALL mysql.rds_set_configuration('binlog retention hours', {hours});"
        if self.platform == "cloud_sql":
            return (
                f"keep at least {hours} h of binlogs on the instance (point-in-time recovery on, "
                f"transaction log retention >= {math.ceil(hours / 24)} day(s)), then set "
                f'"binlog_retention_hours": {hours} in the pipeline configuration'
            )
        return f"SET PERSIST binlog_expire_logs_seconds = {seconds};"

    def to_dict(self) -> JsonObject:
        return {
            "platform": self.platform,
            "seconds": self.seconds,
            "source": self.source,
            "known": self.known,
            "note": self.note,
        }


def format_duration(seconds: float) -> str:
    """``2 d 3 h``, ``5 h 20 min``, ``40 s``: what a person reads in a log line."""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


def choose_needed_file(
    files_oldest_first: Sequence[str], previous_gtids: Callable[[str], GtidSet], checkpoint: GtidSet
) -> str | None:
    """The file a GTID dump from ``checkpoint`` starts in: the newest whose Previous_gtids ⊆ checkpoint.

    ``previous_gtids`` is asked newest first and only until the answer is found (a checkpoint is
    usually in one of the last files). None: no file qualifies, the history is purged.
    """
    for name in reversed(files_oldest_first):
        if previous_gtids(name).issubset(checkpoint):
            return name
    return None


@dataclass(frozen=True)
class HeadroomReading:
    """What the server said about the checkpoint's binlog file, at ``read_at``."""

    retention: BinlogRetention
    needed_file: str
    needed_file_is_active: bool
    needed_file_last_write: datetime.datetime | None
    """The file's last write (the next file's start); None for the active file."""
    read_at: datetime.datetime


def headroom_seconds(reading: HeadroomReading) -> float | None:
    """Seconds until the needed file may be purged (a lower bound); None: never purged automatically."""
    retention_s = reading.retention.seconds
    if retention_s is None:
        return None
    if reading.needed_file_is_active or reading.needed_file_last_write is None:
        return float(retention_s)
    purge_after = reading.needed_file_last_write + datetime.timedelta(seconds=retention_s)
    return (purge_after - reading.read_at).total_seconds()


class HeadroomLevel(StrEnum):
    OK = "ok"
    LOW = "low"
    """Below ``interval × runs``: a warning and a metric."""
    UNSAFE = "unsafe"
    """The retention is shorter than one interval: the run fails early, saying what to change."""
    UNLIMITED = "unlimited"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class HeadroomPolicy:
    interval_s: float | None
    """The schedule's interval; None: no schedule, so nothing to compare with (the headroom is logged)."""
    runs: int = 3
    """How many runs in a row may fail or be missed before the checkpoint must still be readable."""


@dataclass(frozen=True)
class HeadroomAssessment:
    level: HeadroomLevel
    headroom_s: float | None
    reading: HeadroomReading | None
    policy: HeadroomPolicy
    message: str
    to_change: str = ""

    @property
    def next_step(self) -> NextStep | None:
        """Run again once the retention is raised, when it is unsafe (engine/errors.py)."""
        return NextStep.run_again() if self.level is HeadroomLevel.UNSAFE else None

    def to_dict(self) -> JsonObject:
        reading = self.reading
        return {
            "level": self.level.value,
            "headroom_s": None if self.headroom_s is None else round(self.headroom_s),
            "threshold_s": None
            if self.policy.interval_s is None
            else self.policy.interval_s * self.policy.runs,
            "needed_file": reading.needed_file if reading else None,
            "needed_file_is_active": reading.needed_file_is_active if reading else None,
            "needed_file_last_write": (
                reading.needed_file_last_write.isoformat()
                if reading and reading.needed_file_last_write
                else None
            ),
            "retention": reading.retention.to_dict() if reading else None,
            "message": self.message,
            "to_change": self.to_change,
        }


def recommended_retention_s(policy: HeadroomPolicy) -> int:
    """Enough for ``runs`` missed runs after the one that reads: ``interval × (runs + 1)``, in whole hours."""
    assert policy.interval_s is not None
    return math.ceil(policy.interval_s * (policy.runs + 1) / HOUR_S) * HOUR_S


def unknown_headroom(why: str, policy: HeadroomPolicy) -> HeadroomAssessment:
    return HeadroomAssessment(HeadroomLevel.UNKNOWN, None, None, policy, f"binlog headroom unknown: {why}")


def judge_headroom(reading: HeadroomReading, policy: HeadroomPolicy) -> HeadroomAssessment:
    """The one rule that turns a reading into ok / low (warn) / unsafe (fail), with words for users."""
    retention = reading.retention
    headroom = headroom_seconds(reading)
    where = (
        f"its binlog file {reading.needed_file} is the active one (purged no sooner than rotated + retention)"
        if reading.needed_file_is_active
        else f"its binlog file {reading.needed_file} was last written "
        f"{reading.needed_file_last_write:%Y-%m-%d %H:%M:%S} UTC"
    )
    if not retention.known:
        return HeadroomAssessment(
            HeadroomLevel.UNKNOWN,
            None,
            reading,
            policy,
            f"binlog headroom unknown: the server does not say how long it keeps binlogs "
            f'({retention.source}). Set "binlog_retention_hours" in the pipeline configuration to what '
            "the platform keeps.",
        )
    if headroom is None:
        return HeadroomAssessment(
            HeadroomLevel.UNLIMITED,
            None,
            reading,
            policy,
            f"binlog headroom unlimited: {retention.describe()}",
        )
    line = (
        f"binlog headroom {format_duration(headroom)}: the checkpoint stays readable until about "
        f"{reading.read_at + datetime.timedelta(seconds=headroom):%Y-%m-%d %H:%M:%S} UTC; {where}; "
        f"retention {retention.describe()}"
    )
    if policy.interval_s is None:
        return HeadroomAssessment(
            HeadroomLevel.OK, headroom, reading, policy, line + "; no schedule to compare with"
        )
    retention_s, interval = retention.seconds, policy.interval_s
    if retention_s is not None and retention_s < interval:
        return _unsafe(reading, policy, headroom)
    if headroom < interval * policy.runs:
        return _low(reading, policy, headroom, line)
    return HeadroomAssessment(HeadroomLevel.OK, headroom, reading, policy, line)


def _unsafe(reading: HeadroomReading, policy: HeadroomPolicy, headroom: float) -> HeadroomAssessment:
    """A retention shorter than one interval: no checkpoint can count on reaching the next run."""
    assert policy.interval_s is not None
    recommended = recommended_retention_s(policy)
    statement = reading.retention.raise_statement(recommended)
    return HeadroomAssessment(
        HeadroomLevel.UNSAFE,
        headroom,
        reading,
        policy,
        f"binlog retention {reading.retention.describe()} is shorter than the schedule's interval "
        f"({format_duration(policy.interval_s)}): a checkpoint cannot be counted on to survive until the "
        "next run, which would then have to re-snapshot every table. This run's checkpoint stays "
        f"readable for {format_duration(headroom)} more; raise the retention to at least "
        f"{format_duration(recommended)} ({policy.runs} missed runs + 1) with: {statement} and run again "
        "before then.",
        statement,
    )


def _low(reading: HeadroomReading, policy: HeadroomPolicy, headroom: float, line: str) -> HeadroomAssessment:
    """Less headroom than ``runs`` intervals: a warning that says how many failed runs it takes."""
    assert policy.interval_s is not None
    interval = policy.interval_s
    statement = reading.retention.raise_statement(recommended_retention_s(policy))
    urgency = (
        " This run must succeed: if it fails, the next run can no longer resume from this checkpoint."
        if headroom < interval
        else ""
    )
    return HeadroomAssessment(
        HeadroomLevel.LOW,
        headroom,
        reading,
        policy,
        f"{line}. That is less than {policy.runs} schedule intervals "
        f"({format_duration(interval * policy.runs)}): if about {max(0, int(headroom // interval))} more "
        "run(s) in a row fail, the binlog this checkpoint needs is purged and the tables must be "
        f"re-snapshotted.{urgency} Raise the retention with: {statement}",
        statement,
    )
