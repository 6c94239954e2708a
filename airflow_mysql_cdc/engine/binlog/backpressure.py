"""Bounded memory while a transaction is assembled: changes beyond a byte budget spill to disk.

Invariant: the reader holds at most ``max_buffered_bytes`` of decoded changes (estimated, see
:func:`estimated_bytes`) plus the one rows event being decoded, however large the transaction is.
A transaction is yielded only when complete (see :mod:`.changes`), so a transaction larger than
the budget cannot be handed over in pieces; instead its earlier changes are pickled to an anonymous
temporary file and read back, in order, when the consumer iterates ``Transaction.changes``.

Backpressure is the pull model itself: :meth:`BinlogReader.read` is a generator, so while the
consumer works on a transaction the reader decodes nothing and the server's dump thread blocks on
the socket once the kernel buffers fill. Nothing is read ahead, so nothing else needs bounding.

Guarded by ``test_transaction_of_200k_rows_completes_within_the_memory_budget``.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Collection, Iterator
from typing import IO

from airflow_mysql_cdc.engine.binlog.changes import RowChange

DEFAULT_MAX_BUFFERED_BYTES = 64 * 1024 * 1024
# Measured with sys.getsizeof-style accounting on CPython 3.11: a RowChange with its image dicts
# costs about 250 bytes plus about 70 per column value (dict slot, boxed value). The binlog size of
# a rows event is no proxy: 200k two-column rows are 1.8 MB of binlog and 78 MB of Python objects.
_CHANGE_OVERHEAD_BYTES = 256
_VALUE_OVERHEAD_BYTES = 72


def estimated_bytes(event_bytes: int, changes: int, values_per_change: int) -> int:
    """Memory held by ``changes`` decoded row changes of a rows event of ``event_bytes``."""
    return event_bytes + changes * (_CHANGE_OVERHEAD_BYTES + _VALUE_OVERHEAD_BYTES * values_per_change)


class SpilledChanges(Collection[RowChange]):
    """The changes of one transaction: spilled chunks (in a temp file) then the in-memory tail."""

    __slots__ = ("_count", "_file", "_chunk_offsets", "_tail")

    def __init__(self, file: IO[bytes] | None, chunk_offsets: list[int], tail: list[RowChange], count: int):
        self._file = file
        self._chunk_offsets = chunk_offsets
        self._tail = tail
        self._count = count

    @property
    def spilled(self) -> bool:
        return self._file is not None

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[RowChange]:
        if self._file is not None:
            for offset in self._chunk_offsets:
                self._file.seek(offset)
                yield from pickle.load(self._file)
        yield from self._tail

    def __contains__(self, item: object) -> bool:
        return any(change == item for change in self)

    def __repr__(self) -> str:
        return f"SpilledChanges(count={self._count}, spilled_chunks={len(self._chunk_offsets)})"

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class ChangeBuffer:
    """Collects one open transaction's changes under a byte budget, spilling when it is exceeded."""

    __slots__ = (
        "max_buffered_bytes",
        "_changes",
        "_buffered_bytes",
        "_file",
        "_offsets",
        "_count",
        "peak_bytes",
    )

    def __init__(self, max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES) -> None:
        if max_buffered_bytes <= 0:
            raise ValueError(f"max_buffered_bytes must be positive, got {max_buffered_bytes}")
        self.max_buffered_bytes = max_buffered_bytes
        self.peak_bytes = 0
        self._reset()

    def _reset(self) -> None:
        self._changes: list[RowChange] = []
        self._buffered_bytes = 0
        self._file: IO[bytes] | None = None
        self._offsets: list[int] = []
        self._count = 0

    def add(self, changes: list[RowChange], event_bytes: int) -> None:
        """Add the changes of one rows event, estimated to hold ``event_bytes`` in memory."""
        if self._buffered_bytes + event_bytes > self.max_buffered_bytes and self._changes:
            self._spill()
        self._changes.extend(changes)
        self._count += len(changes)
        self._buffered_bytes += event_bytes
        self.peak_bytes = max(self.peak_bytes, self._buffered_bytes)

    def _spill(self) -> None:
        if self._file is None:
            # Closed by SpilledChanges.close, ChangeBuffer.discard or garbage collection.
            self._file = tempfile.TemporaryFile(prefix="mysql-cdc-spill-")  # noqa: SIM115
        self._file.seek(0, 2)
        self._offsets.append(self._file.tell())
        pickle.dump(self._changes, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._changes = []
        self._buffered_bytes = 0

    def has_changes(self) -> bool:
        return self._count > 0

    def finish(self) -> Collection[RowChange]:
        """The collected changes, and an empty buffer for the next transaction."""
        if self._file is None:
            result: Collection[RowChange] = self._changes
        else:
            self._file.flush()
            result = SpilledChanges(self._file, self._offsets, self._changes, self._count)
        self._reset()
        return result

    def discard(self) -> None:
        """Drop an incomplete transaction (its connection was lost before the commit marker)."""
        if self._file is not None:
            self._file.close()
        self._reset()
