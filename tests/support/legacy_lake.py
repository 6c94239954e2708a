"""A lake as version 0.1 wrote it: facts in commit history, a state row without intents.

Version 0.1 (commit 4d871f6) kept each snapshot's plan and each chunk's watermarks in the target's
commit metadata (``airflow_mysql_cdc.snapshot``, with an empty ``airflow_mysql_cdc.applied_gtids``)
and no snapshot log or app transaction; its state row had no ``intents`` column, and every commit
of a batch (also one that only added changelog columns) carried the app transaction of the next
batch number and the position it recorded. These helpers write exactly those formats, so the move
to this version's homes (``engine/lake/state/legacy.py``) is tested on what users' lakes hold.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from airflow_mysql_cdc.engine.lake.delta_layout import (
    COMMIT_METADATA_APPLIED,
    COMMIT_METADATA_BATCH,
    COMMIT_METADATA_EPOCH,
    COMMIT_TS_COLUMN,
    DELETED_AT_COLUMN,
    DELETED_COLUMN,
    GTID_COLUMN,
    target_schema,
    to_delta_array,
)
from airflow_mysql_cdc.engine.lake.layout import LakeLayout, LakeRoot
from airflow_mysql_cdc.engine.lake.state.legacy import SNAPSHOT_METADATA, snapshot_records_in_history
from airflow_mysql_cdc.engine.mysql.definition import TableDefinition
from airflow_mysql_cdc.engine.snapshot import lake_commits
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.lake_commits import DoneChunk, SnapshotProgress
from airflow_mysql_cdc.engine.snapshot.window import ChunkSnapshot


class LegacySnapshotWriter(lake_commits.DeltaSnapshotWriter):
    """The snapshot writer of version 0.1: records in commit metadata, nothing else."""

    def progress(self) -> SnapshotProgress | None:
        table = self._table()
        return lake_commits.progress_from_records(snapshot_records_in_history(table)) if table else None

    def start(
        self, plan: Sequence[Chunk], key: Sequence[str], definition: TableDefinition | None = None
    ) -> SnapshotProgress:
        snapshot_id = uuid.uuid4().hex
        record: dict[str, Any] = {
            "id": snapshot_id, "phase": "start", "key": list(key),
            "plan": [lake_commits.chunk_bounds(chunk).to_json() for chunk in plan],
        }  # fmt: skip
        if definition is not None:
            record["definition"] = definition.to_json()
        table = self._table()
        write_deltalake(
            table if table is not None else self.path, target_schema(self.columns).empty_table(),
            mode="overwrite", schema_mode="overwrite",
            storage_options=None if table is not None else self.storage_options,
            commit_properties=_snapshot_properties(record),
        )  # fmt: skip
        return SnapshotProgress(snapshot_id, tuple(key), list(plan), definition=definition)

    def commit_wave(self, progress: SnapshotProgress, wave) -> None:
        """0.1 wrote each window's rows from the driver, one commit each."""
        for window in wave:
            self.write_chunk(progress, window)

    def write_chunk(self, progress: SnapshotProgress, window: ChunkSnapshot) -> None:
        count = window.rows.num_rows
        data = {c.name: to_delta_array(window.rows.column(c.name).combine_chunks()) for c in self.columns}
        data[GTID_COLUMN] = pa.nulls(count, pa.string())
        data[COMMIT_TS_COLUMN] = pa.nulls(count, pa.timestamp("us", tz="UTC"))
        data[DELETED_COLUMN] = pa.array([False] * count, pa.bool_())
        data[DELETED_AT_COLUMN] = pa.nulls(count, pa.timestamp("us", tz="UTC"))
        record = {
            "id": progress.snapshot_id, "phase": "chunk",
            "chunk": lake_commits.chunk_bounds(window.chunk).to_json(),
            "low": str(window.low_watermark), "high": str(window.high_watermark), "rows": count,
        }  # fmt: skip
        table = self._table()
        assert table is not None
        write_deltalake(
            table, pa.table(data).cast(target_schema(self.columns)), mode="append",
            commit_properties=_snapshot_properties(record),
        )  # fmt: skip
        progress.done[window.chunk.index] = DoneChunk(
            window.chunk, window.low_watermark, window.high_watermark, count
        )


def _snapshot_properties(record: dict[str, Any]) -> CommitProperties:
    return CommitProperties(
        custom_metadata={SNAPSHOT_METADATA: json.dumps(record), COMMIT_METADATA_APPLIED: ""},
        max_commit_retries=0,
    )


def downgrade_state_to_0_1(lake: LakeRoot, storage_options: dict[str, str] | None = None) -> None:
    """Rewrite the state row in version 0.1's schema (no ``intents``), keeping every value it had."""
    path = LakeLayout(lake).state
    table = DeltaTable(path, storage_options=storage_options)
    row = table.to_pyarrow_table().drop_columns(["intents"])
    write_deltalake(table, row, mode="overwrite", schema_mode="overwrite")


def commit_like_0_1(table: DeltaTable, app_id: str, batch_seq: int, recorded: str, epoch: int) -> None:
    """A data-neutral commit carrying what every 0.1 commit of batch ``batch_seq`` carried."""
    table.alter.set_table_properties(
        {"airflow_mysql_cdc.legacy_test": str(batch_seq)},
        raise_if_not_exists=False,
        commit_properties=CommitProperties(
            custom_metadata={
                COMMIT_METADATA_APPLIED: recorded,
                COMMIT_METADATA_BATCH: batch_seq,
                COMMIT_METADATA_EPOCH: epoch,
            },
            app_transactions=[Transaction(app_id, batch_seq)],
        ),
    )  # fmt: skip
