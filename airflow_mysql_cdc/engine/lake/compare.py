"""Compare a source table with its lake copy: row counts and an order-independent checksum.

Invariant: both sides go through the same conversions the pipeline uses (the shared type mapping,
then Delta's storage types), so a table that was replicated exactly compares equal value for
value, and any lost, duplicated or stale row shows up as a missing or extra row. The source is read
with the pipeline's select list (:func:`..mysql.normalise.select_list`), so it sees the stored FLOAT and
DOUBLE values, not MySQL's rounded text of them: a comparison through that text hid a lake that
held rounded values and reported exact ones as different.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.lake.delta_layout import DELETED_COLUMN, METADATA_PREFIX, to_delta_array
from airflow_mysql_cdc.engine.lake.layout import LakeLayout, LakeRoot
from airflow_mysql_cdc.engine.mysql.normalise import (
    SNAPSHOT_SESSION_STATEMENTS,
    normalise_select_row,
    select_list,
)
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.types import read_table_column_types, to_arrow_table
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint


def source_table(endpoint: MySqlEndpoint, schema: str, table: str) -> pa.Table:
    """The source rows as the lake stores them (canonical values, then Delta storage types)."""
    with endpoint.connect() as connection, connection.cursor() as cursor:
        for statement in SNAPSHOT_SESSION_STATEMENTS:
            cursor.execute(statement)
        columns = read_table_column_types(cursor, schema, table)
        cursor.execute(f"SELECT {select_list(columns)} FROM {TableRef(schema, table).quoted}")
        rows = [normalise_select_row(columns, row) for row in cursor.fetchall()]
    canonical = to_arrow_table(columns, rows)
    return pa.table(
        {name: to_delta_array(canonical[name].combine_chunks()) for name in canonical.column_names}
    )


def lake_table(
    lake_root: LakeRoot, schema: str, table: str, storage_options: dict[str, str] | None = None
) -> pa.Table:
    """The live rows of the lake copy, without the pipeline's metadata columns."""
    uri = LakeLayout(lake_root).target(schema, table)
    data = DeltaTable(uri, storage_options=storage_options).to_pyarrow_table()
    if DELETED_COLUMN in data.column_names:
        data = data.filter(pc.invert(pc.fill_null(data[DELETED_COLUMN], False)))
    return data.select([name for name in data.column_names if not name.startswith(METADATA_PREFIX)])


def sorted_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(row.values()) for row in table.to_pylist()), key=repr)


def checksum(rows: list[tuple[Any, ...]]) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update(repr(row).encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class TableComparison:
    table: str
    source_rows: int
    lake_rows: int
    source_checksum: str
    lake_checksum: str
    missing_from_lake: tuple[tuple[Any, ...], ...]
    extra_in_lake: tuple[tuple[Any, ...], ...]
    type_mismatches: tuple[str, ...]

    @property
    def equal(self) -> bool:
        return self.source_checksum == self.lake_checksum and not self.type_mismatches


def compare_table(
    endpoint: MySqlEndpoint,
    lake_root: LakeRoot,
    schema: str,
    table: str,
    storage_options: dict[str, str] | None = None,
) -> TableComparison:
    source = source_table(endpoint, schema, table)
    lake = lake_table(lake_root, schema, table, storage_options)
    mismatches = tuple(
        f"{name}: source {source.schema.field(name).type}, lake "
        f"{lake.schema.field(name).type if name in lake.schema.names else 'missing'}"
        for name in source.schema.names
        if name not in lake.schema.names or lake.schema.field(name).type != source.schema.field(name).type
    )
    source_rows, lake_rows = sorted_rows(source), sorted_rows(lake.select(source.schema.names))
    lake_set, source_set = set(map(repr, lake_rows)), set(map(repr, source_rows))
    return TableComparison(
        table=f"{schema}.{table}",
        source_rows=len(source_rows),
        lake_rows=len(lake_rows),
        source_checksum=checksum(source_rows),
        lake_checksum=checksum(lake_rows),
        missing_from_lake=tuple(row for row in source_rows if repr(row) not in lake_set)[:5],
        extra_in_lake=tuple(row for row in lake_rows if repr(row) not in source_set)[:5],
        type_mismatches=mismatches,
    )
