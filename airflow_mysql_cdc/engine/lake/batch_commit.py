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
from typing import TYPE_CHECKING, TypeVar

from airflow_mysql_cdc.engine.values.gtid import GtidSet

if TYPE_CHECKING:
    from deltalake import CommitProperties

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

    def each(self, items: Iterable[_Item]) -> Iterator[_Item]:
        """``items``, with the fence checked before each: a writer that lost the pipeline stops."""
        for item in items:
            self.assert_owner()
            yield item
