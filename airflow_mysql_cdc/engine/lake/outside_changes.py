"""Another writer's data change between runs: every commit since the pipeline's last must be neutral.

Invariant: a table the binlog application streams (and a joining table its catch-up writes) is
written only if every commit to its target and changelog since the version the pipeline can vouch
for is a data-neutral rearrangement (OPTIMIZE, vacuum, REORG, a table property: rows unchanged).
Otherwise its rows may no longer be the source's, and the sink's open stops the table (action
``stop``, :mod:`.departures`) naming the commit, while the other tables stream on. The in-run fence
(:mod:`.table_handles`) only compares with the version a run saw at its own start, so without this a
DELETE made with deltalake between two runs (a careless backfill, a notebook) passed in silence.

**The version the pipeline vouches for** (``since``) is the later of

- the version of its last commit that may change rows, which every such commit names in its own
  app transaction (:mod:`.state.own_commits`): a batch, a schema change, a snapshot chunk, a
  joining table's catch-up under its own state, a verification's repair;
- the version at which a run's open last found every commit since that one neutral, kept per table
  in the writer's state row (``PipelineState.checked_versions``): so the range a run reads is the
  few commits since the previous run, never a history that log clean-up has long deleted.

Commits the pipeline makes that carry no such app transaction change no rows (a pause, rebase or
departure mark, maintenance's compaction, vacuum and properties): they are neutral like anyone's.

**Findings** (one rule, typed reasons, words for users in :meth:`Finding.reason`):

- :class:`RowsChanged`: a commit since ``since`` is not a rearrangement (WRITE, MERGE, DELETE,
  UPDATE, RESTORE, CREATE OR REPLACE, ADD COLUMNS, …); named by version, operation and time;
- :class:`HistoryCleanedUp`: the commits since ``since`` can no longer all be read (log clean-up
  deleted some, or a writer left one without commit info), so nobody can say whether rows changed;
- :class:`TableReplaced`: the table is at a version before ``since``: replaced or restored under
  the pipeline.

**When the history is gone, the table is refused, not verified.** Comparing it with the source the
way ``verify`` does would need a full read of both while writes go on, inside the binlog
application's claim, and even then leaves out every key changed after the position (a hot table:
most of it), so it could not vouch for the table either; a re-snapshot can. The stop costs only
that table, names the way out, and happens only when the pipeline did not run for longer than the
table's ``delta.logRetentionDuration`` while another engine compacted and cleaned up its log (each
run's open moves ``since`` forward past neutral commits). Guarded by
``tests/integration/test_outside_changes.py``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from deltalake import DeltaTable

from airflow_mysql_cdc.engine.lake.foreign_commits import DATA_NEUTRAL_OPERATIONS
from airflow_mysql_cdc.engine.lake.state.own_commits import last_own_version
from airflow_mysql_cdc.engine.values.json_values import JsonObject

_HISTORY_ATTEMPTS = 3
T = TypeVar("T")


@dataclass(frozen=True)
class OutsideCommit:
    """One commit made after the version the pipeline vouches for."""

    version: int
    operation: str
    timestamp_ms: int | None

    @property
    def neutral(self) -> bool:
        return self.operation in DATA_NEUTRAL_OPERATIONS

    def describe(self) -> str:
        when = (
            datetime.datetime.fromtimestamp(self.timestamp_ms / 1000, datetime.UTC).isoformat(
                timespec="seconds"
            )
            if self.timestamp_ms is not None
            else "an unknown time"
        )
        return f"version {self.version}: {self.operation} at {when}"


@dataclass(frozen=True)
class Finding:
    """Why the pipeline cannot vouch for one lake table (its ``role``: "target of shop.orders")."""

    role: str
    since: int

    def reason(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class RowsChanged(Finding):
    commits: tuple[OutsideCommit, ...]

    def reason(self) -> str:
        named = ", ".join(commit.describe() for commit in self.commits)
        return (
            f"its {self.role} was changed by another writer after the pipeline's last commit to it "
            f"(version {self.since}): {named} (not a data-neutral rearrangement such as OPTIMIZE or "
            "vacuum), so its rows may no longer be the source's"
        )


@dataclass(frozen=True)
class HistoryCleanedUp(Finding):
    current: int
    oldest_readable: int | None

    def reason(self) -> str:
        left = (
            f"the oldest one still readable is version {self.oldest_readable}"
            if self.oldest_readable is not None
            else "none of them is readable"
        )
        return (
            f"the commit log of its {self.role} after the pipeline's last commit to it (version "
            f"{self.since}, now {self.current}) was cleaned up ({left}), so whether another writer "
            "changed its rows in between cannot be known; the pipeline does not stream a table it "
            "cannot vouch for"
        )


@dataclass(frozen=True)
class TableReplaced(Finding):
    current: int

    def reason(self) -> str:
        return (
            f"its {self.role} is at version {self.current}, before version {self.since} of the "
            "pipeline's last commit to it: it was replaced, restored or re-created under the pipeline"
        )


@dataclass(frozen=True)
class Vouched:
    """The table passed: every commit up to ``version`` is the pipeline's or neutral."""

    version: int
    since: int | None
    """The version it was vouched for before (None: never: a table older than this check)."""


def judge(table: DeltaTable, role: str, checked: int | None) -> Finding | Vouched:
    """Whether the pipeline can vouch for ``table`` (refreshed to its latest version) now.

    ``checked``: the version at which the writer's state last vouched for it (None: never).
    """
    table.update_incremental()
    own = last_own_version(table)
    known = [version for version in (own, checked) if version is not None]
    if not known:
        return Vouched(table.version(), None)
    since = max(known)
    for _ in range(_HISTORY_ATTEMPTS):
        current = table.version()
        if current < since:
            return TableReplaced(role, since, current)
        if current == since:
            return Vouched(current, since)
        history = table.history(limit=current - since)
        table.update_incremental()
        if table.version() != current:
            continue  # moved while read: history numbers its entries from the version loaded
        commits = _numbered(history, since, current)
        if commits is None:
            readable = [entry["version"] for entry in history if isinstance(entry.get("version"), int)]
            oldest = min(readable, default=None)
            return HistoryCleanedUp(role, since, current, oldest)
        changed = tuple(commit for commit in commits if not commit.neutral)
        return RowsChanged(role, since, changed) if changed else Vouched(current, since)
    return HistoryCleanedUp(role, since, table.version(), None)


def _numbered(history: list[JsonObject], since: int, current: int) -> list[OutsideCommit] | None:
    """The commits ``since + 1`` to ``current``, oldest first; None unless each has its entry."""
    versions = range(since + 1, current + 1)
    if len(history) != len(versions):
        return None
    by_version = {entry["version"]: entry for entry in history if isinstance(entry.get("version"), int)}
    if set(by_version) != set(versions):
        return None
    commits = []
    for version in versions:
        entry = by_version[version]
        operation = entry.get("operation")
        timestamp = entry.get("timestamp")
        commits.append(
            OutsideCommit(
                version,
                operation if isinstance(operation, str) and operation else "an unknown operation",
                timestamp if isinstance(timestamp, int) else None,
            )
        )
    return commits


def vouched_across(
    table: DeltaTable, role: str, checked: int | None, rearrange: Callable[[], T]
) -> tuple[T, int | None]:
    """Run ``rearrange`` (the pipeline's own data-neutral upkeep) on ``table``; the version to vouch
    for after it, or None when the commits before it could not be vouched for (the next open stops
    the table then). Judged before (the history is whole) and after (nobody slipped in meanwhile),
    so the built-in maintenance's own clean-up never deletes commits no run has vouched for."""
    before = judge(table, role, checked)
    result = rearrange()
    if not isinstance(before, Vouched):
        return result, None
    after = judge(table, role, before.version)
    return result, after.version if isinstance(after, Vouched) else None
