"""How a batch's MERGE is given to delta-rs so that it reads and rewrites only the files it must.

Invariant: the plan never changes what a MERGE does, only what it reads: every target row a source
row's key matches is read, so it is updated or deleted, never inserted a second time. Two things let
delta-rs skip files, and each is used only where it is proven exact:

- **The early file filter** (``streamed_exec=False``): delta-rs derives the source's key range and
  skips files whose statistics lie outside it (``try_construct_early_filter`` in delta-rs's
  ``merge/filter.rs``). It is as exact as the files' statistics, so it runs only when every key
  column keeps exact statistics (:func:`.file_statistics.early_filter_proven`). It once ran for every
  key: delta-rs records a decimal's statistics through a float, so files holding BIGINT UNSIGNED keys
  of 2^63 and more were skipped and their rows inserted again, every run green (issue 33). A key with
  a wider decimal runs streamed (delta-rs's default), which reads every file: correct, and as costly
  as the table is large (docs/benchmarks.md).
- **The batch's bounds** on the leading key column, written into the predicate as literals on the
  target (``t.k >= lo AND t.k <= hi``): they hold for every source row (its own minimum and maximum),
  so they exclude no matching row, and let delta-rs skip files by their statistics in either mode.
  Only integers and printable ASCII strings get them; a decimal literal is parsed as a float, which
  rounds the largest keys.

Both are proven by tests/integration/test_write_path_differential.py: every key type at its edge
values, both execution modes, every layout of a target, against a plain in-memory reference; end to
end, through the shipped DAG and its maintenance with a writer moving BIGINT UNSIGNED keys near
2^64, by tests/integration/test_pipeline_dag_unsigned_keys.py.

Why skip files at all (measured with delta-rs 1.6.6, docs/benchmarks.md "Merges that cost what they
change"): a 50k-row batch of recent keys into a 5M-row table read every file (2-6 s) streamed, and
the one or two its keys lie in (0.15 s with files of 50k rows) with the early filter. delta-rs
rewrites every file in which a row changed, so a MERGE costs about the rows of the files it touches
(1.3 µs a row here): files must be small (``delta.targetFileSize``, 16 MiB by default; with Delta's
100 MiB the newest file grew to 600k rows) and hold narrow key ranges: snapshots write chunks in key
order, maintenance rewrites targets sorted by the leading key column, every table is created with
``delta.targetFileSize`` (:mod:`.delta_layout`), and batches are merged in key order. The batch is
an Arrow table in memory anyway, so it is streamed for its own sake only when very large
(:data:`STREAM_ABOVE_ROWS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from airflow_mysql_cdc.engine.lake.file_statistics import early_filter_proven

STREAM_ABOVE_ROWS = 2_000_000
"""A source larger than this is streamed (delta-rs then keeps only a part of it in memory)."""


@dataclass(frozen=True)
class MergePlan:
    predicate: str
    streamed_exec: bool


def merge_plan(source: pa.Table, key: Sequence[str]) -> MergePlan:
    """The predicate (key match, plus the batch's leading-key bounds) and execution mode for ``source``."""
    match = " AND ".join(f"t.{quote(column)} = s.{quote(column)}" for column in key)
    bounds = _bounds(source, key[0]) if key and source.num_rows else None
    predicate = f"{bounds} AND {match}" if bounds else match
    early_filter = early_filter_proven(source.schema.field(column).type for column in key)
    return MergePlan(predicate, streamed_exec=not early_filter or source.num_rows > STREAM_ABOVE_ROWS)


def _bounds(source: pa.Table, column: str) -> str | None:
    """``t.column >= lo AND t.column <= hi`` for the source's range, when the type has a safe literal."""
    values = source.column(column)
    if values.null_count:
        return None
    extremes = pc.min_max(values)
    low, high = _literal(extremes["min"].as_py()), _literal(extremes["max"].as_py())
    if low is None or high is None:
        return None
    return f"t.{quote(column)} >= {low} AND t.{quote(column)} <= {high}"


def _literal(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.isascii() and value.isprintable():
        return "'" + value.replace("'", "''") + "'"
    # Decimals (BIGINT UNSIGNED is decimal(20,0)) would be parsed as floats, which round the largest
    # keys; dates, times, binary: no bound. The key match alone is exact either way.
    return None


def quote(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'
