"""The streaming side of a snapshot: drop changes a chunk already reflects.

Invariant: a change to a key of chunk ``i`` with GTID ``g`` is dropped exactly when ``g`` is in
the chunk's high watermark ``H_i`` (its effect is in the snapshot rows, see :mod:`.window`), and
applied otherwise. A key-changing update is judged twice: its delete of the old key against the
old key's chunk, its insert of the new key against the new key's chunk. Streaming starts at the
first chunk's low watermark, so it passes every ``H_i``; a GTID outside the union of all ``H_i``
needs no lookup at all, which keeps the filter off the hot path once the snapshot is behind us.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from airflow_mysql_cdc.engine.binlog.changes import Op, RowChange, Transaction
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.key_order import KeyOrder
from airflow_mysql_cdc.engine.values.gtid import GtidSet


@dataclass(frozen=True)
class SnapshottedChunk:
    chunk: Chunk
    high_watermark: GtidSet


class TableChunkIndex:
    """Finds a key's chunk by bisecting the chunks' upper bounds in MySQL order."""

    def __init__(self, chunks: Sequence[SnapshottedChunk], key: Sequence[str], order: KeyOrder) -> None:
        self.chunks = sorted(chunks, key=lambda c: c.chunk.index)
        self.key = tuple(key)
        self.order = order
        uppers = [c.chunk.upper for c in self.chunks if c.chunk.upper is not None]
        self.upper_sort_keys = order.sort_keys(uppers)
        self.union_high = GtidSet()
        for chunk in self.chunks:
            self.union_high |= chunk.high_watermark

    def high_watermarks(self, keys: Sequence[tuple[Any, ...]]) -> list[GtidSet]:
        """The high watermark of each key's chunk (chunk i covers (upper_{i-1}, upper_i])."""
        return [
            self.chunks[bisect.bisect_left(self.upper_sort_keys, sort_key)].high_watermark
            for sort_key in self.order.sort_keys(keys)
        ]


class SnapshotChangeFilter:
    def __init__(self, indexes: dict[str, TableChunkIndex]) -> None:
        self.indexes = indexes

    def filter(self, transaction: Transaction) -> Transaction:
        kept: list[RowChange] = []
        changed = False
        for change in transaction.changes:
            index = self.indexes.get(change.shape.qualified_name)
            if index is None or transaction.gtid not in index.union_high:
                kept.append(change)
                continue
            judged = _judge(change, index, transaction)
            changed |= judged != [change]
            kept.extend(judged or ())
        return replace(transaction, changes=tuple(kept)) if changed else transaction


def _judge(change: RowChange, index: TableChunkIndex, transaction: Transaction) -> list[RowChange] | None:
    key = index.key
    old_key = tuple(change.before[c] for c in key) if change.before is not None else None
    new_key = tuple(change.after[c] for c in key) if change.after is not None else None
    keys = [k for k in (old_key, new_key) if k is not None]
    highs = iter(index.high_watermarks(keys))
    old_high = next(highs) if old_key is not None else GtidSet()
    new_high = next(highs) if new_key is not None else GtidSet()
    gtid = transaction.gtid
    if change.op is Op.INSERT:
        return None if gtid in new_high else [change]
    if change.op is Op.DELETE:
        return None if gtid in old_high else [change]
    if old_key == new_key:
        return None if gtid in new_high else [change]
    # A key-changing update (both images, so both keys): a delete of the old key and an insert of
    # the new one, judged apart.
    assert old_key is not None and new_key is not None
    parts = []
    if gtid not in old_high:
        parts.append(RowChange(change.shape, Op.DELETE, change.before, None, old_key))
    if gtid not in new_high:
        parts.append(RowChange(change.shape, Op.INSERT, None, change.after, new_key))
    return parts or None
