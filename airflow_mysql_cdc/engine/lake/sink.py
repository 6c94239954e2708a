"""The contract every sink keeps: exactly what the apply code calls, with its lifecycle.

A sink receives micro-batches of whole committed transactions in binlog order, together with the
reader's position after the batch, and must:

- commit each batch's data together with that position (a replay is then recognisable);
- on :meth:`Sink.open` (the *claim*), return the position to resume from: its own applied set when
  the requested start is contained in it, and refuse (``SinkBehindError``/``SinkDivergedError``)
  otherwise;
- let only one writer make progress: a second instance fails at start while the first holds the
  lease (``PipelineBusyError``), and a writer that lost the pipeline fails at its next commit
  (``PipelineFencedError``). The writer's :attr:`Sink.epoch` names its claim; an idle writer keeps
  its lease with :meth:`Sink.heartbeat_if_due`, and :meth:`Sink.release` hands it on at the end;
- record which tables the pipeline streams (:attr:`Sink.members`), so a table joins only once its
  lake copy fits the position (:mod:`~airflow_mysql_cdc.engine.apply.admission`).

Lifecycle: ``open`` → (``record_members``) → ``apply``/``apply_change_tables``/``apply_schema_change``/
``heartbeat_if_due`` … → ``release``. Every member but ``open`` needs an opened sink.

Only the delta-rs sink (:class:`~airflow_mysql_cdc.engine.lake.delta_sink.DeltaSink`) exists:
a catalog ``MERGE INTO`` sink cannot be tested on this project's machines, so none is shipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa

from airflow_mysql_cdc.engine.binlog.changes import Transaction
from airflow_mysql_cdc.engine.errors import LakeMismatchError
from airflow_mysql_cdc.engine.lake.change_table import TableChanges
from airflow_mysql_cdc.engine.lake.evolution import TableEvolution
from airflow_mysql_cdc.engine.values.gtid import GtidSet

if TYPE_CHECKING:  # the contract loads no Delta writer (the Airflow side reads it)
    from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineState


class SinkBehindError(LakeMismatchError, RuntimeError):
    """The run asked to start after transactions the sink never received: applying would leave a gap."""


class SinkDivergedError(LakeMismatchError, RuntimeError):
    """The requested start and the sink's applied set are not ordered: different histories."""


def decide_rebase(previous: PipelineState | None, requested_start: GtidSet, rebase: bool) -> bool:
    """Whether a sink's open moves the pipeline from its ``previous`` state to ``requested_start``
    (``rebase``); raises when the lake is behind or off it and no rebase was asked for."""
    if previous is None or previous.holds_no_batch:
        return False
    # A start within an intended batch is no gap: the open resumes from the applied set, and the
    # tables that hold the batch skip it (the replay rule); see PipelineState.reach.
    sink_applied = previous.reach
    if requested_start.issubset(sink_applied):
        return False
    if rebase:
        return True
    if sink_applied.issubset(requested_start):
        raise SinkBehindError(
            f"the lake has applied only {sink_applied or '(nothing)'}, but the run was asked to "
            f"start from {requested_start}: the transactions {requested_start - sink_applied} "
            "never reached the lake. Start from the lake's applied set (or re-snapshot)."
        )
    raise SinkDivergedError(
        f"the requested start {requested_start} and the lake's applied set {sink_applied} "
        f"diverge (the lake lacks {requested_start - sink_applied} and has "
        f"{sink_applied - requested_start} the start does not): they belong to different "
        "histories. Check the checkpoint and the connection; re-snapshot if the source "
        "changed."
    )


@dataclass
class BatchResult:
    """What one micro-batch committed: its number, the position it recorded, its rows and
    transactions per table, and the tables it stopped."""

    batch_seq: int
    applied_gtids: GtidSet
    transactions: int
    rows_by_table: dict[str, int] = field(default_factory=dict)
    transactions_by_table: dict[str, int] = field(default_factory=dict)
    stopped: list[TableEvolution] = field(default_factory=list)
    """Tables whose MERGE did not do what the batch's events imply (:mod:`.batch_check`): they left
    the pipeline at this batch's position (action ``stop``); their later changes must be dropped."""


class Sink(Protocol):
    # --- lifecycle: claim, keep, hand on ---------------------------------------------------------

    def open(self, requested_start: GtidSet, *, rebase: bool = False, keep_members: bool = False) -> GtidSet:
        """Claim the pipeline (next epoch) and return the position to read from.

        ``rebase`` moves a pipeline whose lake is behind or off ``requested_start`` to it (after a
        re-snapshot of every table) and clears its members, or keeps them (``keep_members``: an
        operator's confirmed rebase).
        """
        ...

    @property
    def epoch(self) -> int:
        """This writer's claim; a later claim fences it."""
        ...

    @property
    def stopped_at_open(self) -> list[TableEvolution]:
        """Tables :meth:`open` took out of the pipeline (action ``stop``): another writer changed
        their rows since the pipeline's last commit, or a crash interrupted their stop
        (:mod:`.outside_changes`). Their changes must be dropped."""
        ...

    def heartbeat_if_due(self) -> None:
        """Renew the lease when no batch has done it lately (an idle live stream)."""
        ...

    def release(self) -> None:
        """Let the next instance claim the pipeline at once (the run ended normally)."""
        ...

    # --- membership ------------------------------------------------------------------------------

    @property
    def members(self) -> dict[str, str] | None:
        """Table -> snapshot id it joined with; None for a state recorded before membership was."""
        ...

    @property
    def is_new(self) -> bool:
        """Nothing was ever applied or admitted: the pipeline's first run."""
        ...

    def record_members(self, members: dict[str, str]) -> None:
        """Make ``members`` the pipeline's tables, from its current position on."""
        ...

    # --- applying --------------------------------------------------------------------------------

    @property
    def applied_gtids(self) -> GtidSet:
        """The position every member table reflects."""
        ...

    def apply(self, transactions: Sequence[Transaction], position_after: GtidSet) -> BatchResult:
        """Apply one micro-batch; ``position_after`` is the reader's position after its last transaction."""
        ...

    def apply_change_tables(
        self, tables: Mapping[str, TableChanges], position_after: GtidSet, transactions: int
    ) -> BatchResult:
        """Apply one micro-batch already gathered per table (range readers build these in parallel)."""
        ...

    # --- schema changes --------------------------------------------------------------------------

    def source_fields(self, name: str) -> dict[str, pa.DataType] | None:
        """The source columns ``name``'s target has now, with their types (None: no target yet)."""
        ...

    def dropped_columns(self, name: str) -> tuple[str, ...]:
        """The columns recorded as dropped from ``name``'s source (kept in the lake, NULL since)."""
        ...

    def apply_schema_change(
        self,
        gtid: str,
        statement: str,
        commit_timestamp_us: int,
        evolutions: Sequence[TableEvolution],
        position_after: GtidSet,
    ) -> None:
        """Apply one DDL's effect on each table at its position (:mod:`.evolution_writes`); tables
        that leave are marked and stop being members in the same step."""
        ...
