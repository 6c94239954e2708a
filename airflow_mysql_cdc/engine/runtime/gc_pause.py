"""The cyclic garbage collector, paused where we build many short-lived, acyclic objects.

One mechanism, three users: :class:`CollectorPaused` around one snapshot window's fetch
(:mod:`~airflow_mysql_cdc.engine.snapshot.window`) and one rows event's decoding
(:mod:`~airflow_mysql_cdc.engine.binlog.decoding.rows`), and :class:`BatchCollector` across the
micro-batches of the binlog application, which also collects between batches.

Invariant of :class:`CollectorPaused`: the collector's state after the block is the state before it
(nested pauses and a process that runs without the collector are left as they were).

Invariant of :class:`BatchCollector`: no garbage cycle outlives the batch it was made in by more than
:data:`FULL_COLLECTION_EVERY` batches; the cyclic collector never runs while a batch is being built.

Why: every object of a micro-batch (row images, changes, transactions, the lists a change table is
gathered into) stays alive until the batch is applied, and they form no cycles; collections
triggered by their allocation only rescan them, more slowly as the batch grows. Measured on the
benchmark table (docs/benchmarks.md): the single reader's application ran 100,000 changes in
2.34-2.46 s with the default thresholds and 2.04-2.13 s with the collector paused; a range reader's
task took 1.26-1.29 s instead of 1.10 s. The reader's own pause per rows event
(:mod:`~airflow_mysql_cdc.engine.binlog.decoding.rows`) does not cover what is allocated between
events and in the sink.

Nothing leaks: after each batch, when the batch's objects have been freed by reference counting,
the young generation (everything allocated since, as the collector is paused: the few survivors)
is collected, and the whole heap every :data:`FULL_COLLECTION_EVERY` batches, so cycles made
meanwhile (an exception with its traceback, a library's internal structures) are freed.
"""

from __future__ import annotations

import gc
from types import TracebackType

FULL_COLLECTION_EVERY = 20


class CollectorPaused:
    """``with CollectorPaused(): ...`` runs the block without cyclic collections, then restores the state.

    A class rather than a generator context manager: the rows-event decoder enters it per event.
    """

    __slots__ = ("_was_enabled",)

    def __init__(self) -> None:
        self._was_enabled = False

    def __enter__(self) -> CollectorPaused:
        self._was_enabled = gc.isenabled()
        if self._was_enabled:
            gc.disable()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._was_enabled:
            gc.enable()


class BatchCollector(CollectorPaused):
    """``with BatchCollector() as collector: ... collector.after_batch() ...``; restores the collector."""

    __slots__ = ("_batches",)

    def __init__(self) -> None:
        super().__init__()
        self._batches = 0

    def __enter__(self) -> BatchCollector:
        super().__enter__()
        return self

    def after_batch(self) -> None:
        """Call when a batch has been applied and released."""
        if not self._was_enabled:
            return  # the caller's process runs without the cyclic collector: leave it so
        self._batches += 1
        gc.collect(2 if self._batches % FULL_COLLECTION_EVERY == 0 else 0)
