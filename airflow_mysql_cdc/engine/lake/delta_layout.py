"""What a pipeline's Delta tables' columns are called, and which types they store.

Invariant: the metadata column names are a public contract (documented in
docs/binlog-application.md); downstream readers depend on them. Change them only with a migration.
Where the tables live is :mod:`.layout`.

Delta Lake has no unsigned integers, no TIME type and no decimals wider than 38 digits, so the
canonical Arrow values of :mod:`airflow_mysql_cdc.engine.mysql.types` are widened on the way in:
unsigned integers to the next signed width (BIGINT UNSIGNED and BIT to decimal(20,0)), TIME to
int64 microseconds (MySQL TIME may be negative or above 24 h), DECIMAL(p>38) to its exact text.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Mapping, Sequence

import pyarrow as pa

from airflow_mysql_cdc.engine.lake.file_statistics import STATISTICS_COLUMNS_PROPERTY, statistics_property
from airflow_mysql_cdc.engine.mysql.types import ColumnType

GTID_COLUMN = "_cdc_gtid"
COMMIT_TS_COLUMN = "_cdc_commit_ts"
DELETED_COLUMN = "_cdc_deleted"
DELETED_AT_COLUMN = "_cdc_deleted_at"
OP_COLUMN = "_cdc_op"
SEQUENCE_COLUMN = "_cdc_seq"
COMMIT_DATE_COLUMN = "_cdc_commit_date"
METADATA_PREFIX = "_cdc_"

ROW_KEY_PROPERTY = "airflow_mysql_cdc.row_key"
"""Table property of a target: its row key columns (JSON list), what maintenance sorts files by."""
TARGET_FILE_SIZE_PROPERTY = "delta.targetFileSize"
DEFAULT_TARGET_FILE_BYTES = 16 * 1024 * 1024
"""Data files of targets and changelogs are kept this size (``maintenance.target_file_mb``): any
writer's compaction honours ``delta.targetFileSize``, and a MERGE rewrites only the files its keys hit."""

COMMIT_METADATA_APPLIED = "airflow_mysql_cdc.applied_gtids"
COMMIT_METADATA_BATCH = "airflow_mysql_cdc.batch_seq"
COMMIT_METADATA_EPOCH = "airflow_mysql_cdc.epoch"


def delta_type(arrow_type: pa.DataType) -> pa.DataType:
    """The type Delta stores for a canonical Arrow type."""
    if pa.types.is_unsigned_integer(arrow_type):
        return {8: pa.int16(), 16: pa.int32(), 32: pa.int64()}.get(arrow_type.bit_width, pa.decimal128(20, 0))
    if pa.types.is_duration(arrow_type):
        return pa.int64()
    if pa.types.is_decimal(arrow_type) and arrow_type.precision > 38:
        return pa.string()
    return arrow_type


def to_delta_array(array: pa.Array) -> pa.Array:
    """Cast one canonical column to the type Delta stores (see :func:`delta_type`)."""
    target = delta_type(array.type)
    if target == array.type:
        return array
    if pa.types.is_duration(array.type):
        return array.cast(pa.int64())
    if pa.types.is_decimal(target):
        return pa.array([None if v is None else decimal.Decimal(v) for v in array.to_pylist()], type=target)
    if pa.types.is_string(target):
        return pa.array([None if v is None else str(v) for v in array.to_pylist()], type=target)
    return array.cast(target)


def source_columns_schema(columns: tuple[ColumnType, ...]) -> list[pa.Field]:
    return [pa.field(column.name, delta_type(column.arrow_type())) for column in columns]


def target_schema(columns: tuple[ColumnType, ...]) -> pa.Schema:
    return pa.schema(
        [
            *source_columns_schema(columns),
            pa.field(GTID_COLUMN, pa.string()),
            pa.field(COMMIT_TS_COLUMN, pa.timestamp("us", tz="UTC")),
            pa.field(DELETED_COLUMN, pa.bool_()),
            pa.field(DELETED_AT_COLUMN, pa.timestamp("us", tz="UTC")),
        ]
    )


def snapshot_rows(columns: tuple[ColumnType, ...], rows: pa.Table) -> pa.Table:
    """A snapshot chunk's canonical rows as target rows: Delta's types, no change metadata (a row
    read from a table, not from the binlog), not deleted."""
    count = rows.num_rows
    data = {column.name: to_delta_array(rows.column(column.name).combine_chunks()) for column in columns}
    data[GTID_COLUMN] = pa.nulls(count, pa.string())
    data[COMMIT_TS_COLUMN] = pa.nulls(count, pa.timestamp("us", tz="UTC"))
    data[DELETED_COLUMN] = pa.array([False] * count, pa.bool_())
    data[DELETED_AT_COLUMN] = pa.nulls(count, pa.timestamp("us", tz="UTC"))
    return pa.table(data).cast(target_schema(columns))


def changelog_schema(columns: tuple[ColumnType, ...]) -> pa.Schema:
    return pa.schema(
        [
            *source_columns_schema(columns),
            pa.field(OP_COLUMN, pa.string()),
            pa.field(GTID_COLUMN, pa.string()),
            pa.field(COMMIT_TS_COLUMN, pa.timestamp("us", tz="UTC")),
            pa.field(SEQUENCE_COLUMN, pa.int32()),
            pa.field(COMMIT_DATE_COLUMN, pa.date32()),
        ]
    )


def table_properties(
    schema: pa.Schema, row_key: Sequence[str] | None = None, partition_by: Sequence[str] = ()
) -> dict[str, str]:
    """The properties a target (with its ``row_key``) or a changelog of ``schema`` is created with:
    its file size, its row key, and the columns that keep statistics (:mod:`.file_statistics`)."""
    properties = {
        TARGET_FILE_SIZE_PROPERTY: str(DEFAULT_TARGET_FILE_BYTES),
        STATISTICS_COLUMNS_PROPERTY: statistics_property(schema, row_key or (), partition_by),
    }
    if row_key:
        properties[ROW_KEY_PROPERTY] = json.dumps(list(row_key))
    return properties


def recorded_row_key(configuration: Mapping[str, str]) -> tuple[str, ...]:
    """The row key a target's properties record (empty for a changelog or a table without one)."""
    return tuple(json.loads(configuration.get(ROW_KEY_PROPERTY) or "[]"))
