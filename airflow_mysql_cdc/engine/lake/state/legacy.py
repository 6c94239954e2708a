"""Facts that lakes written by version 0.1 keep only in Delta commit history, read once to move them.

Invariant: nothing here is read after a lake has moved on. Version 0.1 recorded two facts in the
commit metadata of target and changelog tables, where Delta's log clean-up deletes them after
``delta.logRetentionDuration`` (30 days by default; a checkpoint by any writer triggers it):

- **snapshot records** (``airflow_mysql_cdc.snapshot``: each snapshot's plan and definition in its
  first commit, each finished chunk's bounds and watermarks in the chunk's commit): moved into the
  table's snapshot log (:mod:`.snapshot_log`, rows marked ``migrated``);
- **a table's applied set** (``airflow_mysql_cdc.applied_gtids``, with an app transaction numbering
  the batch): needed only where a crash left a table ahead of the pipeline's state; moved into the
  state's intents (:mod:`.table_positions`).

The move happens on the first run after the upgrade, before that run writes anything to the
table (the pipeline's own commits can trigger the clean-up too), under the pipeline's lease. A
history that was already cleaned up cannot be read back: the lake then says so instead of guessing.
"""

from __future__ import annotations

import json

from deltalake import DeltaTable

from airflow_mysql_cdc.engine.lake.delta_layout import COMMIT_METADATA_APPLIED
from airflow_mysql_cdc.engine.lake.state.snapshot_records import (
    SnapshotRecord,
    SnapshotStart,
    record_from_json,
)
from airflow_mysql_cdc.engine.values.gtid import GtidSet

SNAPSHOT_METADATA = "airflow_mysql_cdc.snapshot"
_HISTORY_LIMIT = 100_000


def snapshot_records_in_history(table: DeltaTable) -> list[SnapshotRecord]:
    """The latest snapshot's start and chunk records from the commit metadata, newest first ([]: none)."""
    records: list[SnapshotRecord] = []
    for commit in table.history(limit=_HISTORY_LIMIT):
        raw = commit.get(SNAPSHOT_METADATA)
        if raw is None:
            continue
        record = record_from_json(json.loads(raw) if isinstance(raw, str) else raw)
        records.append(record)
        if isinstance(record, SnapshotStart):
            return [item for item in records if item.snapshot_id == record.snapshot_id]
    return []


def applied_in_history(table: DeltaTable) -> GtidSet:
    """The applied set recorded by the newest commit that records one (empty when none does)."""
    for commit in table.history(limit=200):
        if COMMIT_METADATA_APPLIED in commit:
            return GtidSet.parse(commit[COMMIT_METADATA_APPLIED])
    return GtidSet()


def history_complete(table: DeltaTable) -> bool:
    """Whether the commit history still reaches the table's first version (nothing cleaned up)."""
    versions = [commit.get("version") for commit in table.history(limit=_HISTORY_LIMIT)]
    return 0 in versions
