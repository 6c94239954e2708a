"""A batch's rows shaped for its changelog: the changelog is history, so a column never changes type.

Invariant: every batch appended to a changelog has exactly the changelog's columns, in its order,
and a value is never written into a column of another type. Values of a column whose type changed
(a re-snapshot after MODIFY) go to a new column named by :func:`retyped_name` (from the type alone,
so a replay makes the same columns); a column the source dropped holds NULL; columns the batch
brings are added first, in a commit that records the position *before* the batch. Guarded by
tests/integration/test_schema_changes.py and test_schema_change_replay.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Field

from airflow_mysql_cdc.engine.lake.evolution_writes import sync_statistics_after_adding
from airflow_mysql_cdc.engine.lake.state.own_commits import own_commit


def retyped_name(name: str, arrow_type: pa.DataType) -> str:
    """The changelog column that holds a column's values after a re-snapshot changed its type."""
    return f"{name}__{re.sub(r'[^0-9a-z]+', '_', str(arrow_type).lower()).strip('_')}"


def changelog_fitter(
    schema: pa.Schema, table: DeltaTable, properties: CommitProperties
) -> tuple[Callable[[pa.Table], pa.Table], pa.Schema]:
    """How rows of ``schema`` become rows of the changelog ``table`` (and the schema they get).

    The changelog is history, so a column never changes its type there: values of a column whose
    type changed (a re-snapshot after MODIFY) go to a new column named by :func:`retyped_name`, and
    the old one holds NULL from then on. The names depend on the types alone, never on the values,
    so a replay makes the same columns. Added columns are added now, in a commit with ``properties``
    (the position *before* the batch: the batch is not in the changelog until its append).
    """
    lake = pa.schema(table.schema().to_arrow())
    renamed: dict[str, str] = {}
    for field in schema:
        if field.name in lake.names and lake.field(field.name).type != field.type:
            renamed[field.name] = retyped_name(field.name, field.type)
    fitted_names = [renamed.get(name, name) for name in schema.names]
    missing = [
        pa.field(name, field.type)
        for name, field in zip(fitted_names, schema, strict=True)
        if name not in lake.names
    ]
    if missing:
        added = [Field.from_arrow(field) for field in missing]
        table.alter.add_columns(added, commit_properties=own_commit(properties, table))
        sync_statistics_after_adding(table, properties)
        table.update_incremental()
        lake = pa.schema(table.schema().to_arrow())

    def fit(rows: pa.Table) -> pa.Table:
        return with_dropped_columns(rows.rename_columns(fitted_names) if renamed else rows, lake)

    return fit, lake


def with_dropped_columns(rows: pa.Table, lake_schema: pa.Schema) -> pa.Table:
    """``rows`` with NULL in the lake's columns the source no longer has, in the lake's column order."""
    if rows.schema.names == lake_schema.names:
        return rows
    present = set(rows.schema.names)
    return pa.table(
        {
            field.name: rows[field.name] if field.name in present else pa.nulls(rows.num_rows, field.type)
            for field in lake_schema
        }
    ).cast(lake_schema)
