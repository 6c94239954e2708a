"""The streaming side of a snapshot: drop changes a chunk already reflects.

Invariant: a change to a key of chunk ``i`` with GTID ``g`` is dropped exactly when ``g`` is in
the chunk's high watermark ``H_i`` (its effect is in the snapshot rows, see :mod:`.window`), and
applied otherwise. A key-changing update is judged twice: its delete of the old key against the
old key's chunk, its insert of the new key against the new key's chunk. Streaming starts at the
first chunk's low watermark, so it passes every ``H_i``; a GTID outside the union of all ``H_i``
needs no lookup at all, which keeps the filter off the hot path once the snapshot is behind us.

A kept change may still be one the chunk holds: MySQL makes a transaction visible before it adds
its GTID to ``gtid_executed``, so a chunk's ``SELECT`` can see a transaction its ``H_i`` lacks
(:mod:`.window`, point 3). Applying it again is harmless (full row images), but the per-batch check
of the lake (:mod:`~airflow_mysql_cdc.engine.lake.batch_check`) assumes the target lacks every kept
change, and a DELETE whose row the chunk already missed would stop the table. Such a transaction
committed, by the server's clock, no later than the ``H_i`` read (``high_read_us``), so a kept change
whose commit timestamp is not later than that (plus :data:`CLOCK_SLACK_US` for clock adjustments and
a stream from another server of the same history) is marked *unsettled*
(``Transaction.unsettled_changes``): the check counts its key's past as unknown, a bound, for that
batch only. Every other kept change is checked exactly. Chunks recorded without the time (before
1.3) mark nothing, as before.
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

CLOCK_SLACK_US = 2_000_000
"""How much later than a chunk's ``high_read_us`` a kept change may have committed and still be
counted as possibly in the chunk: clock steps between the two reads, and a stream read from a
replica of the snapshot's server (whose immediate timestamps lag the source's by its apply delay)."""


@dataclass(frozen=True)
class SnapshottedChunk:
    chunk: Chunk
    high_watermark: GtidSet
    high_read_us: int | None = None
    """The server's clock when ``high_watermark`` was read (None: not recorded)."""


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
        reads = [chunk.high_read_us for chunk in self.chunks if chunk.high_read_us is not None]
        self.unsettled_until_us = max(reads) + CLOCK_SLACK_US if reads else -1
        """No change committed later than this can be in any chunk unseen by its watermark."""

    def needs_lookup(self, transaction: Transaction) -> bool:
        """Whether a change of ``transaction`` may be one a chunk holds (filtered or unsettled)."""
        return (
            transaction.gtid in self.union_high or transaction.commit_timestamp_us <= self.unsettled_until_us
        )

    def chunks_of(self, keys: Sequence[tuple[Any, ...]]) -> list[SnapshottedChunk]:
        """Each key's chunk (chunk i covers (upper_{i-1}, upper_i])."""
        return [
            self.chunks[bisect.bisect_left(self.upper_sort_keys, sort_key)]
            for sort_key in self.order.sort_keys(keys)
        ]


class SnapshotChangeFilter:
    def __init__(self, indexes: dict[str, TableChunkIndex]) -> None:
        self.indexes = indexes

    def filter(self, transaction: Transaction) -> Transaction:
        """The transaction without the changes a chunk holds, its possibly-held ones marked (module doc)."""
        kept: list[RowChange] = []
        unsettled: list[int] = []
        changed = False
        for change in transaction.changes:
            index = self.indexes.get(change.shape.qualified_name)
            if index is None or not index.needs_lookup(transaction):
                kept.append(change)
                continue
            judged = _judge(change, index, transaction)
            changed |= [part for part, _ in judged] != [change] or any(held for _, held in judged)
            for part, possibly_held in judged:
                if possibly_held:
                    unsettled.append(len(kept))
                kept.append(part)
        if not changed:
            return transaction
        return replace(transaction, changes=tuple(kept), unsettled_changes=frozenset(unsettled))


def _judge(
    change: RowChange, index: TableChunkIndex, transaction: Transaction
) -> list[tuple[RowChange, bool]]:
    """The parts of ``change`` no chunk holds, each with whether its chunk may hold it all the same."""
    key = index.key
    old_key = tuple(change.before[c] for c in key) if change.before is not None else None
    new_key = tuple(change.after[c] for c in key) if change.after is not None else None
    keys = [k for k in (old_key, new_key) if k is not None]
    chunks = iter(index.chunks_of(keys))
    old_chunk = next(chunks) if old_key is not None else None
    new_chunk = next(chunks) if new_key is not None else None
    if change.op is Op.INSERT or (change.op is Op.UPDATE and old_key == new_key):
        judged = [(change, new_chunk)]
    elif change.op is Op.DELETE:
        judged = [(change, old_chunk)]
    else:
        # A key-changing update (both images, so both keys): a delete of the old key and an insert
        # of the new one, judged apart.
        assert old_key is not None and new_key is not None
        judged = [
            (RowChange(change.shape, Op.DELETE, change.before, None, old_key), old_chunk),
            (RowChange(change.shape, Op.INSERT, None, change.after, new_key), new_chunk),
        ]
    gtid, moment = transaction.gtid, transaction.commit_timestamp_us
    return [
        (part, chunk.high_read_us is not None and moment <= chunk.high_read_us + CLOCK_SLACK_US)
        for part, chunk in judged
        if chunk is not None and gtid not in chunk.high_watermark
    ]
