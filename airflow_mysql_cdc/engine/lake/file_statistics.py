"""Delta file statistics: only where they are exact, and only exact ones prune a MERGE.

Invariant: every min/max statistic a reader or a MERGE of this lake can use bounds the rows of its
file. A reader skips a file whose statistics exclude its filter, and a MERGE whose early file filter
(delta-rs's ``streamed_exec=False``) skips a file holding a matching row inserts a second row for
its key instead of updating the first. So:

1. **Statistics are kept only for columns whose Delta type delta-rs writes exactly**
   (:func:`has_exact_statistics`), through the table property ``delta.dataSkippingStatsColumns``
   (:func:`statistics_columns`), which every writer honours (delta-rs's writes, MERGEs and OPTIMIZE;
   Spark's) and delta-rs's readers and early filter apply to old files' statistics too. delta-rs 1.6.6
   computes a decimal's statistics through a 64-bit float: a ``decimal(20,0)`` (BIGINT UNSIGNED) of
   2^53 + 1 is recorded as 2^53, and everything from 2^63 on as 2^63 - 1, so readers with a filter
   on such a value (delta-rs, DuckDB) found nothing and the MERGE duplicated rows (issue 33). A
   float holds every decimal of up to 15 digits exactly, so decimals of precision 15 or less keep
   their statistics; wider ones get none. DATETIME columns (timestamps without a zone) get none
   either: delta-rs records timestamps to the millisecond, as the Delta protocol says, and its own
   reader allows for that only within the nanosecond range (years 1677-2262): a DATETIME(6) of
   4920-10-27 05:41:36.001957 at a file's maximum is recorded as ...36.001, and a filter on it found
   nothing (8 of 60 random values after 2262; the write-path test found it). MySQL's TIMESTAMP ends in
   2038 and the pipeline's own timestamps are commit times, so zoned timestamps keep theirs. Binary
   columns get none from delta-rs anyway.
2. **Only columns with exact statistics may prune a MERGE** (:func:`early_filter_proven`); a key with
   another column runs the MERGE streamed, which reads every file (the price of a wide decimal key,
   docs/benchmarks.md).
3. **Files written before the property keep their old statistics**, which DuckDB's Delta reader still
   uses (delta-rs's do not). The property's first setting on a table that has files records when
   (:data:`EXACT_STATISTICS_SINCE_PROPERTY`); the lake maintenance rewrites every file older than
   that (:func:`files_with_stale_statistics`), and the statistics of the rewritten files are exact.

Proven, not assumed: tests/integration/test_write_path_differential.py applies workloads to every
key type at its edge values through both execution modes and every layout of a target, compares
with a plain reference, and reads every row back by its key with delta-rs and DuckDB;
``test_delta_rs_still_writes_decimal_statistics_through_a_float`` and
``test_delta_rs_still_misreads_datetime_statistics_after_2262`` fail once delta-rs is fixed (then
those columns may keep their statistics).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:  # delta_layout imports this module, and executors import it without deltalake
    from deltalake import CommitProperties, DeltaTable

STATISTICS_COLUMNS_PROPERTY = "delta.dataSkippingStatsColumns"
EXACT_STATISTICS_SINCE_PROPERTY = "airflow_mysql_cdc.exact_statistics_since_ms"
"""When a table that already had files got :data:`STATISTICS_COLUMNS_PROPERTY` (ms since the epoch):
its files written before then may carry inexact statistics until maintenance rewrites them."""

EXACT_DECIMAL_DIGITS = 15
"""Decimals of at most this many digits survive delta-rs's float statistics exactly."""
INDEXED_COLUMNS = 32
"""Delta's default number of leading columns with statistics (``delta.dataSkippingNumIndexedCols``)."""


def has_exact_statistics(arrow_type: pa.DataType) -> bool:
    """Whether delta-rs records exact bounds for a column of this Delta type (module docstring)."""
    if pa.types.is_decimal(arrow_type):
        return arrow_type.precision <= EXACT_DECIMAL_DIGITS
    return (
        pa.types.is_integer(arrow_type)
        or pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or pa.types.is_date32(arrow_type)
        or (pa.types.is_timestamp(arrow_type) and arrow_type.tz is not None)
        or pa.types.is_boolean(arrow_type)
        or pa.types.is_floating(arrow_type)
    )


def early_filter_proven(key_types: Iterable[pa.DataType]) -> bool:
    """Whether a MERGE on a key of these types may let delta-rs prune files by the source's key range."""
    types = list(key_types)
    return bool(types) and all(has_exact_statistics(arrow_type) for arrow_type in types)


def statistics_columns(
    schema: pa.Schema, row_key: Sequence[str] = (), partition_by: Sequence[str] = ()
) -> list[str]:
    """The columns that keep statistics: those of exact type among the first :data:`INDEXED_COLUMNS`
    (Delta's default), and the row key's (a MERGE prunes by it) wherever they are."""
    leading = {field.name for field in list(schema)[:INDEXED_COLUMNS]} | set(row_key)
    return [
        field.name
        for field in schema
        if field.name in leading and field.name not in partition_by and has_exact_statistics(field.type)
    ]


def statistics_property(
    schema: pa.Schema, row_key: Sequence[str] = (), partition_by: Sequence[str] = ()
) -> str:
    """:func:`statistics_columns` as the property's value: backquoted names (any name parses)."""
    return ",".join(
        "`" + name.replace("`", "``") + "`" for name in statistics_columns(schema, row_key, partition_by)
    )


def sync_statistics_columns(
    table: DeltaTable,
    row_key: Sequence[str],
    commit_properties: CommitProperties | None = None,
    schema: pa.Schema | None = None,
) -> bool:
    """Set :data:`STATISTICS_COLUMNS_PROPERTY` for the table's columns (or ``schema``, the columns it
    is about to get); True if it changed.

    A table that had files, no such property yet, and a column delta-rs kept inexact statistics of
    (:func:`_inexact_when_written`) also gets :data:`EXACT_STATISTICS_SINCE_PROPERTY`: its older files
    are rewritten by the maintenance. One commit when anything changes, none otherwise.
    """
    metadata = table.metadata()
    columns = schema if schema is not None else pa.schema(table.schema().to_arrow())
    wanted = {STATISTICS_COLUMNS_PROPERTY: statistics_property(columns, row_key, metadata.partition_columns)}
    current = metadata.configuration
    if current.get(STATISTICS_COLUMNS_PROPERTY) == wanted[STATISTICS_COLUMNS_PROPERTY]:
        return False
    if STATISTICS_COLUMNS_PROPERTY not in current and table.file_uris() and _inexact_when_written(table):
        wanted[EXACT_STATISTICS_SINCE_PROPERTY] = str(int(time.time() * 1000))
    table.alter.set_table_properties(wanted, raise_if_not_exists=False, commit_properties=commit_properties)
    return True


def _inexact_when_written(table: DeltaTable) -> bool:
    """Whether delta-rs, keeping Delta's default statistics (the first 32 columns), recorded some of
    this table's inexactly: a decimal of more than 15 digits or a DATETIME among them."""
    partitions = set(table.metadata().partition_columns)
    leading = [field for field in pa.schema(table.schema().to_arrow()) if field.name not in partitions]
    return any(
        (pa.types.is_decimal(field.type) and field.type.precision > EXACT_DECIMAL_DIGITS)
        or (pa.types.is_timestamp(field.type) and field.type.tz is None)
        for field in leading[:INDEXED_COLUMNS]
    )


def files_with_stale_statistics(table: DeltaTable) -> pa.Table:
    """The add actions of files written before the table's statistics became exact (none if always)."""
    since = table.metadata().configuration.get(EXACT_STATISTICS_SINCE_PROPERTY)
    files = pa.table(table.get_add_actions(flatten=True))
    if since is None or not files.num_rows:
        return files.slice(0, 0)
    return files.filter(pc.less(files.column("modification_time").cast(pa.int64()), int(since)))
