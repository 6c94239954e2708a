"""The Delta writes of a schema change: what a :class:`TableEvolution` does to one table's tables.

Invariant: a :class:`TableEvolution` is applied at its DDL's position, before any row after the DDL,
and every Delta commit it makes carries the pipeline position in its commit metadata like a batch
(:mod:`.delta_sink`), so a replay after a crash recognises it: the *last* commit of an evolution
records the position that includes the DDL, earlier ones (adding the columns) the position before
it. A crash between them leaves the table at the position before the DDL with the columns already
added; the replay adds nothing twice (it adds only missing columns) and sets the defaults again,
which is harmless because no row after the DDL can have been written yet.

What each action does to the tables (the action itself, :class:`TableEvolution`, is a plain value
in :mod:`.evolution`): ``evolve`` adds columns to the target and the changelog and gives existing rows
their value; a dropped column stays in the lake (delta-rs cannot drop one without rewriting the
table), NULL from then on, and is recorded in the target's table properties
(``airflow_mysql_cdc.dropped_columns``); ``truncate`` empties the target (or soft-deletes every row)
and appends one ``_cdc_op = 'truncate'`` row to the changelog; ``leave``/``resnapshot`` mark the
target (:mod:`.departures`); ``unchanged`` writes nothing.

A batch's rows meeting a changelog whose columns differ (a re-snapshot changed a type, the source
dropped a column) are fitted by :mod:`.changelog_fitting`, per batch, not here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Field, write_deltalake

from airflow_mysql_cdc.engine.lake.delta_layout import (
    COMMIT_DATE_COLUMN,
    COMMIT_TS_COLUMN,
    DELETED_AT_COLUMN,
    DELETED_COLUMN,
    GTID_COLUMN,
    METADATA_PREFIX,
    OP_COLUMN,
    SEQUENCE_COLUMN,
    recorded_row_key,
)
from airflow_mysql_cdc.engine.lake.departures import Departure, mark_departed
from airflow_mysql_cdc.engine.lake.evolution import AddedColumn, TableEvolution
from airflow_mysql_cdc.engine.lake.file_statistics import sync_statistics_columns
from airflow_mysql_cdc.engine.lake.state.own_commits import own_commit

DROPPED_COLUMNS_PROPERTY = "airflow_mysql_cdc.dropped_columns"
TRUNCATE_OP = "truncate"


def source_fields(table: DeltaTable) -> dict[str, pa.DataType]:
    """The target's or changelog's source columns (metadata columns left out), with their types."""
    schema = pa.schema(table.schema().to_arrow())
    return {field.name: field.type for field in schema if not field.name.startswith(METADATA_PREFIX)}


def add_columns(table: DeltaTable, added: tuple[AddedColumn, ...], properties: CommitProperties) -> None:
    """Add the columns the table lacks (a replay finds them there and adds nothing)."""
    present = set(source_fields(table))
    missing = [
        Field.from_arrow(column.delta_field()) for column in added if column.column.name not in present
    ]
    if missing:
        table.alter.add_columns(missing, commit_properties=own_commit(properties, table))
        sync_statistics_after_adding(table, properties)


def set_existing_rows(
    table: DeltaTable, added: tuple[AddedColumn, ...], properties: CommitProperties
) -> None:
    """Give every row the value the DDL gave existing rows, in one commit (none for an empty table).

    The values travel as a one-row Arrow source converted like every row (:meth:`AddedColumn.delta_value`),
    so the lake stores exactly what a snapshot of the source would.
    """
    if not added:
        return
    source = pa.table({f"v{i}": column.delta_value() for i, column in enumerate(added)})
    updates = {_quote(column.column.name): f"s.v{i}" for i, column in enumerate(added)}
    table.merge(
        source, "true", source_alias="s", target_alias="t", commit_properties=own_commit(properties, table)
    ).when_matched_update(updates).execute()


def dropped_columns(table: DeltaTable) -> tuple[str, ...]:
    """The columns the target's table properties record as gone from the source."""
    return tuple(json.loads(table.metadata().configuration.get(DROPPED_COLUMNS_PROPERTY) or "[]"))


def record_dropped(table: DeltaTable, dropped: tuple[str, ...], properties: CommitProperties) -> None:
    """Remember in the target's table properties which columns the source no longer has."""
    merged = sorted(set(dropped_columns(table)) | set(dropped))
    table.alter.set_table_properties(
        {DROPPED_COLUMNS_PROPERTY: json.dumps(merged)},
        raise_if_not_exists=False,
        commit_properties=properties,
    )


def truncate_target(
    table: DeltaTable, soft_deletes: bool, gtid: str, commit_timestamp_us: int, properties: CommitProperties
) -> None:
    """Every row goes, at the TRUNCATE's position (soft deletes: every live row is marked deleted)."""
    if not soft_deletes:
        table.delete(commit_properties=own_commit(properties, table))
        return
    source = pa.table({"gtid": pa.array([gtid], pa.string()), "ts": _timestamp(commit_timestamp_us)})
    deleted = {
        _quote(DELETED_COLUMN): "true",
        _quote(DELETED_AT_COLUMN): "s.ts",
        _quote(GTID_COLUMN): "s.gtid",
        _quote(COMMIT_TS_COLUMN): "s.ts",
    }
    table.merge(
        source, "true", source_alias="s", target_alias="t", commit_properties=own_commit(properties, table)
    ).when_matched_update(deleted, predicate=f"t.{_quote(DELETED_COLUMN)} = false").execute()


def append_truncate_record(
    table: DeltaTable, gtid: str, commit_timestamp_us: int, properties: CommitProperties
) -> None:
    """One changelog row saying the table was emptied here: source columns NULL, ``_cdc_op`` truncate."""
    schema = pa.schema(table.schema().to_arrow())
    commit_ts = _timestamp(commit_timestamp_us)
    values: dict[str, pa.Array] = {
        OP_COLUMN: pa.array([TRUNCATE_OP], pa.string()),
        GTID_COLUMN: pa.array([gtid], pa.string()),
        COMMIT_TS_COLUMN: commit_ts,
        SEQUENCE_COLUMN: pa.array([0], pa.int32()),
        COMMIT_DATE_COLUMN: commit_ts.cast(pa.date32()),
    }
    row = pa.table({field.name: values.get(field.name, pa.nulls(1, field.type)) for field in schema})
    write_deltalake(table, row.cast(schema), mode="append", commit_properties=own_commit(properties, table))


@dataclass(frozen=True)
class SchemaChangeCommit:
    """The DDL being applied, and the commit properties of its steps (see the module docstring)."""

    gtid: str
    statement: str
    commit_timestamp_us: int
    before: CommitProperties
    """For steps before the last: they record the position before the DDL."""
    final: CommitProperties
    """For the last step: it records the position that includes the DDL."""
    soft_deletes: bool


def apply_to_tables(
    evolution: TableEvolution,
    target: DeltaTable | None,
    changelog: DeltaTable | None,
    ddl: SchemaChangeCommit,
    snapshot_id: str = "",
) -> None:
    """Apply ``evolution`` to the table's target and changelog (None: not created yet, nothing to do);
    ``snapshot_id``: the snapshot a leaving table was streamed with, kept in its mark."""
    evolution.check_applicable()
    if evolution.action == "evolve":
        for table in (target, changelog):
            if table is not None:
                add_columns(table, evolution.new_columns, ddl.before)
        if target is not None:
            changed = tuple(added for added in evolution.new_columns if added.existing_rows_value is not None)
            set_existing_rows(target, changed, ddl.before)
            record_dropped(target, evolution.dropped, ddl.final)  # also the commit of the position
    elif evolution.action == "truncate":
        if target is not None:
            truncate_target(target, ddl.soft_deletes, ddl.gtid, ddl.commit_timestamp_us, ddl.final)
        if changelog is not None:
            append_truncate_record(changelog, ddl.gtid, ddl.commit_timestamp_us, ddl.final)
    elif evolution.leaves and target is not None:
        departure = Departure(
            evolution.table, ddl.gtid, evolution.action, evolution.reason, ddl.statement, snapshot_id
        )
        mark_departed(target, departure, ddl.final)


def sync_statistics_after_adding(table: DeltaTable, properties: CommitProperties) -> None:
    """Added columns keep statistics only if their type's are exact (:mod:`.file_statistics`)."""
    table.update_incremental()
    sync_statistics_columns(table, recorded_row_key(table.metadata().configuration), properties)


def _timestamp(microseconds: int) -> pa.Array:
    return pa.array([microseconds], pa.int64()).cast(pa.timestamp("us", tz="UTC"))


def _quote(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'
