"""Repair: exactly the differing keys of a target set to their values at the verified position.

Invariant: a key is repaired only when the verification found it differing with the source's row
for it being its row at the position ``E`` (:mod:`.table_check`: the row read when no transaction
after ``E`` touched the key, else the binlog's before image of its first change after ``E``; absent:
the key did not exist at ``E``). One MERGE on the key upserts the rows the lake lacks or holds
wrongly and deletes (with ``soft_deletes``: flags deleted) the rows the source lacks; no other row
is touched. A key the target holds twice first loses its live copies (:func:`remove_live_rows`, a
MERGE of its own: the upsert alone would update every copy and leave two). The target then equals
the source at ``E`` for those keys, which is what the pipeline's state says it holds, so the next
run continues from ``E`` as if the damage never happened.

How the next run sees this commit: it carries no app transaction, so the table's own applied set
(:mod:`..lake.state.table_positions`) stays the state's, and it is made under the pipeline's lease,
between runs: a run loads each table's version when it opens, so a repair is never "another
writer" to it. A run that outlived its lease and still writes *is* fenced by it, as it must be.
The repair does not write the changelog: the changelog records the source's changes, and a repair
is none (like a snapshot's rows, which are not in it either); it is recorded in the commit's
metadata (``airflow_mysql_cdc.repair``), the task's result and the ``_cdc/verify`` log.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable

from airflow_mysql_cdc.engine.lake.delta_layout import (
    COMMIT_TS_COLUMN,
    DELETED_AT_COLUMN,
    DELETED_COLUMN,
    GTID_COLUMN,
    METADATA_PREFIX,
)
from airflow_mysql_cdc.engine.lake.foreign_commits import check_writable
from airflow_mysql_cdc.engine.lake.merge_plan import merge_plan, quote
from airflow_mysql_cdc.engine.lake.state.own_commits import own_commit
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.verify.comparable import Key

REPAIR_COMMIT_METADATA = "airflow_mysql_cdc.repair"
_ACTION = "_repair_action"
_AT = "_repair_at"


@dataclass(frozen=True)
class Repair:
    """What one table's repair wrote."""

    upserted: int
    deleted: int
    version: int
    """The target's version after the repair's commit."""


def repair_target(
    table: DeltaTable,
    role: str,
    upserts: pa.Table,
    deletes: Sequence[Key],
    key: Sequence[str],
    *,
    soft_deletes: bool,
    position: GtidSet,
    repaired_at_us: int,
) -> Repair:
    """One MERGE: ``upserts`` (source columns, Delta types) in, the rows keyed ``deletes`` out."""
    check_writable(table, role, updates_rows=True)
    source = _merge_source(upserts, deletes, key, repaired_at_us)
    names = upserts.column_names
    lake_names = [
        name for name in pa.schema(table.schema().to_arrow()).names if not name.startswith(METADATA_PREFIX)
    ]
    upsert = {name: f"s.{quote(name)}" for name in names}
    upsert |= {name: "null" for name in lake_names if name not in set(names)}
    upsert |= {
        GTID_COLUMN: "null",
        COMMIT_TS_COLUMN: "null",
        DELETED_COLUMN: "false",
        DELETED_AT_COLUMN: "null",
    }
    metadata = {"position": str(position), "upserted": upserts.num_rows, "deleted": len(deletes)}
    merger = table.merge(
        source,
        merge_plan(source, key).predicate,
        source_alias="s",
        target_alias="t",
        commit_properties=own_commit(  # not another writer's change: the next open vouches for it
            CommitProperties(
                custom_metadata={REPAIR_COMMIT_METADATA: json.dumps(metadata)}, max_commit_retries=0
            ),
            table,
        ),
    ).when_matched_update(upsert, predicate=f"s.{_ACTION} = 'upsert'")
    if soft_deletes:
        merger = merger.when_matched_update(
            {DELETED_COLUMN: "true", DELETED_AT_COLUMN: f"s.{_AT}"}, predicate=f"s.{_ACTION} = 'delete'"
        )
    else:
        merger = merger.when_matched_delete(predicate=f"s.{_ACTION} = 'delete'")
    merger.when_not_matched_insert(upsert, predicate=f"s.{_ACTION} = 'upsert'").execute()
    table.update_incremental()
    return Repair(upserts.num_rows, len(deletes), table.version())


def remove_live_rows(
    table: DeltaTable,
    role: str,
    keys: Sequence[Key],
    key: Sequence[str],
    schema: pa.Schema,
    *,
    position: GtidSet,
) -> Repair:
    """One MERGE deleting every live row of ``keys``: a key the target holds twice, before
    :func:`repair_target` puts its one row back. Needed because a MERGE updates every target row its
    key matches, so an upsert alone left both copies (equal now, still two). Between the two commits
    the key is missing from the target, which the next verification would prove and repair, and the
    next run's MERGE would insert; both are made under the pipeline's lease, between runs."""
    check_writable(table, role, updates_rows=True)
    source = pa.table(
        {
            name: pa.array([row_key[index] for row_key in keys], schema.field(name).type)
            for index, name in enumerate(key)
        }
    )
    metadata = {"position": str(position), "removed_keys_held_twice": len(keys)}
    merged = (
        table.merge(
            source,
            merge_plan(source, key).predicate,
            source_alias="s",
            target_alias="t",
            commit_properties=own_commit(  # the pipeline's own: the next open vouches for it
                CommitProperties(
                    custom_metadata={REPAIR_COMMIT_METADATA: json.dumps(metadata)}, max_commit_retries=0
                ),
                table,
            ),
        )
        .when_matched_delete(predicate=f"t.{DELETED_COLUMN} IS NULL OR NOT t.{DELETED_COLUMN}")
        .execute()
    )
    table.update_incremental()
    return Repair(0, int(merged.get("num_target_rows_deleted", 0)), table.version())


def _merge_source(upserts: pa.Table, deletes: Sequence[Key], key: Sequence[str], at_us: int) -> pa.Table:
    count = len(deletes)
    columns: dict[str, pa.Array] = {}
    for field in upserts.schema:
        if field.name in key:
            position = list(key).index(field.name)
            removed = pa.array([row_key[position] for row_key in deletes], field.type)
        else:
            removed = pa.nulls(count, field.type)
        columns[field.name] = pa.concat_arrays([upserts.column(field.name).combine_chunks(), removed])
    columns[_ACTION] = pa.array(["upsert"] * upserts.num_rows + ["delete"] * count, pa.string())
    columns[_AT] = pa.array([at_us] * (upserts.num_rows + count), pa.timestamp("us", tz="UTC"))
    return pa.table(columns)
