"""One batch of the sink between its intent and its recorded position: the commit skeleton's value.

Invariant: every write of :class:`~airflow_mysql_cdc.engine.lake.delta_sink.DeltaSink` (a batch of
rows, a schema change) has the same skeleton, written once in ``DeltaSink._begin`` and
``DeltaSink._committed``: the batch's intent is in the pipeline state first; each table then commits
with :attr:`BatchCommit.final` (its app transaction names the intent), the fence checked before each
table (:meth:`BatchCommit.each`); last, the state records the position. A crash anywhere in between
is replayed exactly (:mod:`.state.pipeline_state`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from deltalake import CommitProperties, Transaction

from airflow_mysql_cdc.engine.lake.delta_layout import (
    COMMIT_METADATA_APPLIED,
    COMMIT_METADATA_BATCH,
    COMMIT_METADATA_EPOCH,
)
from airflow_mysql_cdc.engine.values.gtid import GtidSet

_Item = TypeVar("_Item")


@dataclass(frozen=True)
class BatchCommit:
    """The batch's number, the position it records, and the commit properties its writes use."""

    seq: int
    position: GtidSet
    final: CommitProperties
    """For commits that apply the batch: they carry its app transaction."""
    before: CommitProperties
    """For commits that only prepare it (columns added): the position before, no app transaction."""
    assert_owner: Callable[[], None]

    @classmethod
    def of(
        cls,
        seq: int,
        position: GtidSet,
        before: GtidSet,
        app_id: str,
        epoch: int,
        assert_owner: Callable[[], None],
    ) -> BatchCommit:
        """Batch ``seq`` of the writer at ``epoch``, from ``before`` to ``position``."""
        final = CommitProperties(
            custom_metadata=_metadata(position, epoch, seq),
            app_transactions=[Transaction(app_id, seq)],
            max_commit_retries=0,
        )
        preparing = CommitProperties(custom_metadata=_metadata(before, epoch, None), max_commit_retries=0)
        return cls(seq, position, final, preparing, assert_owner)

    def each(self, items: Iterable[_Item]) -> Iterator[_Item]:
        """``items``, with the fence checked before each: a writer that lost the pipeline stops."""
        for item in items:
            self.assert_owner()
            yield item


def _metadata(position: GtidSet, epoch: int, batch_seq: int | None) -> dict[str, str | int]:
    """For people reading a table's history; never read back (commit history is pruned)."""
    metadata: dict[str, str | int] = {COMMIT_METADATA_APPLIED: str(position), COMMIT_METADATA_EPOCH: epoch}
    if batch_seq is not None:
        metadata[COMMIT_METADATA_BATCH] = batch_seq
    return metadata
