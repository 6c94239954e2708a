"""The one door to a pipeline's state in its lake: every fact a run needs to place itself and resume.

Invariant: every fact here is read from what Delta maintenance keeps (rows read as data, table
properties, app transactions in checkpoints), never from commit history alone, so compaction,
checkpoints, log clean-up and vacuum by any writer leave a pipeline able to run. Where each fact
lives (docs/architecture.md, "Where the pipeline's state lives"):

=============================== ==========================================================
fact                            home
=============================== ==========================================================
position, epoch, lease, members ``_cdc/state``: one row (:mod:`.pipeline_state`)
batches in flight               the same row's ``intents``; each table's app transaction
a table's own applied set       its app transaction, resolved by :mod:`.table_positions`
snapshot plans, chunks,         ``_cdc/snapshots/<schema>/<table>`` rows, tied to the target
watermarks, definitions         by its snapshot app transaction (:mod:`.snapshot_log`)
departures, stops, dropped      the target's table properties (:mod:`..departures`)
columns
pauses                          the target's table property (:mod:`..pauses`)
the published chain             ``_cdc/checkpoints`` rows (:mod:`..checkpoint_log`)
a joining table's catch-up      ``_cdc/joins/...``: one row each, like ``_cdc/state``
a table's version after the     its own-commit app transaction, in that very commit
pipeline's last commit that     (:mod:`.own_commits`)
may change rows
versions an open vouched for    the state row's ``checked_versions`` (:mod:`..outside_changes`)
=============================== ==========================================================

Opening (the binlog application), admission, the snapshot writer and run placement ask this
class; none reads a Delta table's history for a fact. Only the check of other writers' commits
(:mod:`..outside_changes`) reads the commits made since the version the state vouches for, and when
log clean-up deleted them it says it cannot know, never guesses. Lakes written by version 0.1 are moved on by
:meth:`LakeState.migrate_snapshots` and the sink's open (:mod:`.legacy`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from airflow_mysql_cdc.engine.lake.checkpoint_log import CheckpointLog
from airflow_mysql_cdc.engine.lake.departures import Departure, departure_of
from airflow_mysql_cdc.engine.lake.layout import LakeLayout, LakeRoot
from airflow_mysql_cdc.engine.lake.pauses import PauseMark, pause_of
from airflow_mysql_cdc.engine.lake.state.legacy import history_complete, snapshot_records_in_history
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineState, PipelineStateStore
from airflow_mysql_cdc.engine.lake.state.snapshot_log import SNAPSHOT_APP_ID, SnapshotLog
from airflow_mysql_cdc.engine.lake.state.snapshot_records import SnapshotRecord, SnapshotStart
from airflow_mysql_cdc.engine.mysql.schema import TableRef

log = logging.getLogger(__name__)


class LakeState:
    """The state of the pipeline ``pipeline_id`` kept in the lake at ``lake_root``."""

    def __init__(
        self, lake_root: LakeRoot, pipeline_id: str = "", storage_options: Mapping[str, str] | None = None
    ) -> None:
        self.layout = LakeLayout(lake_root)
        self.pipeline_id = pipeline_id
        self.storage_options = dict(storage_options) if storage_options else None

    def of_pipeline(self, pipeline_id: str) -> LakeState:
        """The state of another pipeline id in the same lake (a joining table's catch-up)."""
        return LakeState(self.layout.root, pipeline_id, self.storage_options)

    # --- the pipeline's row ------------------------------------------------------------------

    def pipeline_store(
        self, state_path: str | None = None, pipeline_id: str | None = None
    ) -> PipelineStateStore:
        """The state row's reader and writer (``state_path``: a joining table's own catch-up state)."""
        return PipelineStateStore(
            state_path or self.layout.state, pipeline_id or self.pipeline_id, self.storage_options
        )

    def pipeline(self) -> PipelineState | None:
        """Position, epoch, lease and members (None: the pipeline has not started in this lake)."""
        return self.pipeline_store().read()

    # --- the published chain -----------------------------------------------------------------

    def checkpoint_log(self) -> CheckpointLog:
        return CheckpointLog(self.layout.root, self.pipeline_id, self.storage_options)

    # --- tables ------------------------------------------------------------------------------

    def target(self, ref: TableRef) -> DeltaTable | None:
        try:
            return DeltaTable(self.layout.target(ref.schema, ref.table), storage_options=self.storage_options)
        except TableNotFoundError:
            return None

    def departure(self, ref: TableRef) -> Departure | None:
        """The mark of a table that left the pipeline (None: it never did, or has no target)."""
        target = self.target(ref)
        return departure_of(target) if target is not None else None

    def pause(self, ref: TableRef) -> PauseMark | None:
        """The mark of a table an operator paused (None: not paused, or no target)."""
        target = self.target(ref)
        return pause_of(target) if target is not None else None

    def snapshot_log(self, ref: TableRef) -> SnapshotLog:
        return SnapshotLog(
            self.layout.snapshot_log(ref.schema, ref.table),
            self.layout.target(ref.schema, ref.table),
            self.storage_options,
        )

    def latest_snapshot_start(self, ref: TableRef) -> SnapshotStart | None:
        """The start record of the table's latest snapshot (None when it has none)."""
        starts = (record for record in self.snapshot_records(ref) if isinstance(record, SnapshotStart))
        return next(starts, None)

    def latest_snapshot_id(self, ref: TableRef) -> str:
        """The id of the table's latest snapshot ("" when it has none)."""
        start = self.latest_snapshot_start(ref)
        return start.snapshot_id if start is not None else ""

    def snapshot_records(self, ref: TableRef, target: DeltaTable | None = None) -> list[SnapshotRecord]:
        """The latest snapshot's committed records, newest first ([]: the table has no snapshot).

        A target written before the snapshot log existed and not moved on yet is read from its
        commit history (read only; :meth:`migrate_snapshots` moves it).
        """
        target = target if target is not None else self.target(ref)
        if target is None:
            return []
        records = self.snapshot_log(ref).committed(target.transaction_version(SNAPSHOT_APP_ID))
        if records is None:
            return snapshot_records_in_history(target)
        return records

    def migrate_snapshots(self, refs: Iterable[TableRef]) -> None:
        """Move snapshot records that only a version 0.1 commit history holds into the snapshot logs.

        Done by writers (the binlog application after its claim, the snapshot application), before
        their first commit to the table. A history already cleaned up that shows no snapshot is left
        alone: whether the table had one cannot be known, and admission says so if it matters.
        """
        for ref in refs:
            target = self.target(ref)
            if target is None:
                continue
            snapshot_log = self.snapshot_log(ref)
            if snapshot_log.committed(target.transaction_version(SNAPSHOT_APP_ID)) is not None:
                continue
            records = snapshot_records_in_history(target)
            if not records and not history_complete(target):
                log.warning(
                    "%s: no snapshot record in its commit history, which was cleaned up before this "
                    "version could move it; left as it is",
                    ref,
                )
                continue
            snapshot_log.migrate(records)
            log.info(
                "%s: moved %d snapshot record(s) from its commit history into %s",
                ref,
                len(records),
                snapshot_log.path,
            )
