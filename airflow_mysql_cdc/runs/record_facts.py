"""The per-table facts of a run's checkpoint record, read from the lake when the record is made.

Invariant: a record's per-table facts are true whichever attempt (or orphaned application) wrote
the run's changes, because they are read from the lake at publish time, never taken from the
result of the attempt that publishes. A ``kill -9`` of the task process leaves its spark-submit
running; it finishes the segment, and the retry finds everything applied. Its own application's
result then says nothing was applied, and the record said ``rows_applied: 0`` (issue 26); read from
the lake it counts what the run's transactions changed.

Per table (``schema.table``), next to ``snapshot_id``:

- ``rows_by_op``: the changelog rows of the run's transactions (its end set minus its start set;
  for a table the predecessor left paused, minus the position it was paused at: a run that resumes
  it applies everything since the pause) per ``_cdc_op`` (insert, update, delete; truncate when
  there was one); such a table's facts say where its changes start (``changes_since``);
- ``rows_applied``: their sum, the changes the run applied to the table;
- ``commit_dates``: ``first``/``last`` ``_cdc_commit_date`` of those rows (None: no change), the
  changelog partitions a reader of the run's change feed needs;
- ``lake_versions``: per lake table (``target``, ``changelog``) the Delta versions the run's span
  covers, ``first`` to ``last`` inclusive. ``last`` is the table's version when the record was made;
  ``first`` is one past the version the predecessor record stored for it, or 0 when the predecessor
  stored none (the pipeline's first record, a table that joined in this run, a predecessor of
  version 3 or older) or when the table's version went backwards (the table was recreated); None
  when the table got no commit since the predecessor (``last`` is then where it stays). The range
  holds every commit since the predecessor was published: this run's data commits (MERGEs, appends,
  schema changes, a snapshot's overwrite), and the commits of upkeep in between (the predecessor's
  ``maintain_lake``: compaction, vacuum; another writer's). It comes from records only: commit history
  is pruned by maintenance, records are not;
- ``stopped``: why, for a table the pipeline stopped (its lake copy was found wrong,
  :func:`stopped_tables`): the run's end set does not hold for it;
- ``snapshotted``: the table was (re-)snapshotted in this run (its ``snapshot_id`` differs from the
  predecessor's, or there is no predecessor): its target range holds the snapshot's overwrite, so a
  reader takes the target whole; its changelog holds only the changes after the snapshot.

Tested by ``tests/unit/airflow/runs/test_record_facts.py`` and, against a real kill -9, by the
scheduler test.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.runs import lake

if TYPE_CHECKING:
    from airflow_mysql_cdc.engine.lake.run_changes import RunChanges

LAKE_TABLE_KINDS = ("target", "changelog")
CLOCK_MARGIN = datetime.timedelta(days=1)
"""How far the clocks of the Airflow worker (which stamps a record) and of the writers (which stamp
data files) may disagree before a changelog partition holding the run's rows could be missed."""


@dataclass(frozen=True)
class RunFacts:
    """A run's per-table facts (the record's ``tables``) and the changes they were read from, per
    table, which :mod:`.run_counts` counts per transaction without reading the lake again."""

    tables: dict[str, JsonObject]
    changes: dict[str, RunChanges]


def run_facts(
    lake_root: str,
    tables: Sequence[str],
    *,
    start: GtidSet,
    end: GtidSet,
    predecessor: CheckpointRecord | None,
    snapshot_ids: Mapping[str, str],
    storage_options: dict[str, str] | None,
) -> RunFacts:
    """Per table, the facts of the module doc for a run whose transactions are ``end - start``, with
    the changes each table's facts count."""
    since = written_since_ms(predecessor)
    previous = predecessor.tables if predecessor is not None else {}
    facts: dict[str, JsonObject] = {}
    read: dict[str, RunChanges] = {}
    for name in tables:
        ref = TableRef.parse(name)
        before = previous.get(str(ref), {})
        since_gtids = table_start(start, before)
        transactions = end - since_gtids
        changes = read[str(ref)] = lake.run_changes(
            lake_root, ref, transactions, storage_options, written_since_ms=since
        )
        versions = before.get("lake_versions") or {}
        facts[str(ref)] = {
            "rows_applied": changes.total,
            "rows_by_op": changes.by_op,
            "commit_dates": {"first": changes.first_commit_date, "last": changes.last_commit_date},
            "lake_versions": {
                kind: version_range(
                    (versions.get(kind) or {}).get("last"),
                    lake.table_version(lake_root, ref, kind, storage_options),
                )
                for kind in LAKE_TABLE_KINDS
            },
            "snapshotted": predecessor is None or before.get("snapshot_id") != snapshot_ids.get(str(ref), ""),
        }
        if since_gtids != start:
            facts[str(ref)]["changes_since"] = str(since_gtids)
    return RunFacts(facts, read)


def table_start(start: GtidSet, predecessor_facts: Mapping[str, Any]) -> GtidSet:
    """Where the table's changes of this run start: the run's start, or for a table the predecessor
    left paused, its frozen position (a run that resumes it applies everything since the pause)."""
    paused_at = predecessor_facts.get("paused_at")
    return GtidSet.parse(paused_at) if paused_at is not None else start


def version_range(previous_last: int | None, now: int | None) -> dict[str, int | None]:
    """``first``/``last`` of the versions a table got since its predecessor's ``previous_last``."""
    if now is None:
        return {"first": None, "last": None}
    if previous_last is None or now < previous_last:
        return {"first": 0, "last": now}
    return {"first": previous_last + 1 if now > previous_last else None, "last": now}


def written_since_ms(predecessor: CheckpointRecord | None) -> int | None:
    """A time before any write of the run's changes (None: unknown, every partition is read).

    Nothing after the predecessor's end set is written before the predecessor is published: one
    run at a time applies (``max_active_tis_per_dag=1``), and each run's applications stop at its
    segment end.
    """
    if predecessor is None or not predecessor.published_at:
        return None
    published = datetime.datetime.fromisoformat(predecessor.published_at)
    return int((published - CLOCK_MARGIN).timestamp() * 1000)


def stopped_tables(
    lake_root: str,
    tables: Sequence[str],
    members: Mapping[str, str] | None,
    storage_options: dict[str, str] | None,
) -> dict[str, str]:
    """Each stopped table (not a member, its stop mark holding) with why it was stopped: the
    record's ``stopped`` fact (its end set does not hold for that table)."""
    stopped: dict[str, str] = {}
    for name in tables:
        ref = TableRef.parse(name)
        if str(ref) in (members or {}):
            continue
        mark = lake.departure(lake_root, ref, storage_options)
        if mark is None or not mark.stopped:
            continue
        progress = lake.snapshot_progress(lake_root, ref, storage_options)
        if mark.holds_for(progress.snapshot_id if progress is not None else ""):
            stopped[str(ref)] = mark.reason
    return stopped
