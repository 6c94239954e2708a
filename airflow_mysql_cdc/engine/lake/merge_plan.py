"""How a batch's MERGE is given to delta-rs so that it reads and rewrites only the files it must.

Invariant: the plan never changes what a MERGE does, only what it reads: the key bounds added to
the predicate hold for every source row (they are the batch's own minimum and maximum of the
leading key column), so every target row a source row can match satisfies them.

Why (measured with delta-rs 1.6.6, docs/benchmarks.md "Merges that cost what they change"):

- ``streamed_exec=True`` (delta-rs's default) streams the source and gives up the early file
  pruning that derives the source's key range from the source itself (``try_construct_early_filter``
  in delta-rs's ``merge/filter.rs``); a 50k-row batch of recent keys into a 5M-row table then read
  every file (2-6 s) instead of the one or two its keys lie in (0.15 s with files of 50k rows). The
  batch is an Arrow table in memory anyway, so it is not streamed unless it is very large
  (:data:`STREAM_ABOVE_ROWS`).
- The batch's bounds on the leading key column, written into the predicate as literals on the target
  (``t.k >= lo AND t.k <= hi``), let delta-rs skip files by their min/max statistics in either mode.
- delta-rs rewrites every file in which a row changed, so a MERGE costs about the rows of the files
  it touches (1.3 µs a row here): files must be small (``delta.targetFileSize``, 16 MiB by default;
  with Delta's 100 MiB the newest file grew to 600k rows) and hold narrow key ranges: snapshots
  write chunks in key order, maintenance rewrites targets sorted by the leading key column, every
  table is created with ``delta.targetFileSize`` (:mod:`.delta_layout`), and batches are merged in
  key order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

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
    return MergePlan(predicate, streamed_exec=source.num_rows > STREAM_ABOVE_ROWS)


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
