"""One batch (or catch-up wave) of one table as one Delta commit: the target's MERGE, the changelog's append.

Invariant: each function makes exactly one data commit carrying ``properties`` (the batch's
position and app transaction, :mod:`.delta_sink`), so the table holds the whole batch or none of
it. The changelog may first gain columns in a commit of its own that records the position *before*
the batch (``before``, no app transaction): a crash between the two leaves a table that is not
ahead and whose added columns the replay finds present.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake

from airflow_mysql_cdc.engine.lake.change_table import ACTION_COLUMN, TableChanges
from airflow_mysql_cdc.engine.lake.changelog_fitting import changelog_fitter
from airflow_mysql_cdc.engine.lake.delta_layout import (
    COMMIT_TS_COLUMN,
    DELETED_AT_COLUMN,
    DELETED_COLUMN,
    GTID_COLUMN,
)
from airflow_mysql_cdc.engine.lake.merge_plan import MergePlan, merge_plan, quote
from airflow_mysql_cdc.engine.lake.state.own_commits import own_commit


@dataclass(frozen=True)
class TargetMerge:
    """The MERGE of a batch's last row per key into its target: upserts, deletes (or soft deletes)."""

    source: pa.Table
    plan: MergePlan
    upsert: dict[str, str]
    soft_deletes: bool
    properties: CommitProperties

    @classmethod
    def of(
        cls,
        batch: TableChanges,
        lake_columns: dict[str, pa.DataType],
        soft_deletes: bool,
        properties: CommitProperties,
    ) -> TargetMerge:
        """``lake_columns``: the target's source columns now; those the batch lacks were dropped (NULL)."""
        columns = [column.name for column in batch.shape.columns]
        upsert = {name: f"s.{quote(name)}" for name in [*columns, GTID_COLUMN, COMMIT_TS_COLUMN]}
        upsert |= {DELETED_COLUMN: "false", DELETED_AT_COLUMN: "null"}
        upsert |= {name: "null" for name in lake_columns if name not in set(columns)}
        source = batch.target_rows()
        return cls(source, merge_plan(source, batch.shape.primary_key), upsert, soft_deletes, properties)

    def execute(self, table: DeltaTable) -> dict[str, Any]:
        """Run the MERGE on ``table``; returns delta-rs's metrics (files scanned, removed, added).

        With soft deletes a deleted key keeps one row flagged deleted, holding the values it had when
        it was deleted (the delete's before image), whether the batch found it in the target or
        inserted it itself and deleted it again: the target is what applying the changes one by one
        gives, however they were cut into batches (tests/integration/test_write_path_differential.py).
        """
        merger = table.merge(
            self.source,
            self.plan.predicate,
            source_alias="s",
            target_alias="t",
            commit_properties=own_commit(self.properties, table),
            streamed_exec=self.plan.streamed_exec,
        ).when_matched_update(self.upsert, predicate=f"s.{ACTION_COLUMN} = 'upsert'")
        upserted = merger.when_not_matched_insert(self.upsert, predicate=f"s.{ACTION_COLUMN} = 'upsert'")
        if not self.soft_deletes:
            return upserted.when_matched_delete(predicate=f"s.{ACTION_COLUMN} = 'delete'").execute()
        tombstone = self.upsert | {DELETED_COLUMN: "true", DELETED_AT_COLUMN: f"s.{COMMIT_TS_COLUMN}"}
        deleted = f"s.{ACTION_COLUMN} = 'delete'"
        return (
            upserted.when_matched_update(tombstone, predicate=deleted)
            .when_not_matched_insert(tombstone, predicate=deleted)
            .execute()
        )


def append_changes(
    table: DeltaTable,
    batch: TableChanges,
    schema: pa.Schema,
    properties: CommitProperties,
    before: CommitProperties,
    prepared: Callable[[int], None] = lambda version: None,
) -> None:
    """Append every change of ``batch`` to the changelog ``table``, streamed a part at a time.

    Columns the changelog lacks (or has with another type, after a re-snapshot) are added first
    (:func:`.changelog_fitting.changelog_fitter`); a wave's spilled changes are read back part by
    part, so the append holds one part in memory, not the wave.
    """
    fit, lake_schema = changelog_fitter(schema, table, before)
    table.update_incremental()
    prepared(table.version())  # the writer's own column commit, if any, is not another writer's

    def batches() -> Iterator[pa.RecordBatch]:
        for rows in batch.changelog_tables(schema):
            yield from fit(rows).to_batches()

    reader = pa.RecordBatchReader.from_batches(lake_schema, batches())
    write_deltalake(table, reader, mode="append", commit_properties=own_commit(properties, table))
