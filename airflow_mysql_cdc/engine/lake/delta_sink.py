"""Exactly-once application of binlog micro-batches to Delta tables with delta-rs.

Invariants:

1. **Data and position commit together, per table.** A batch is first *intended* in the state
   (its number and the position after it), then every commit of its data to a target or changelog
   table carries the Delta app transaction ``(airflow_mysql_cdc:<pipeline id>, batch number)``, and
   only then does the state record the position. A table therefore never holds data without the
   lake knowing which GTIDs it reflects, and that knowledge lives in checkpoints and rows, not in
   commit history (:mod:`.state.table_positions`).
2. **Replays are recognised.** After a crash the pipeline resumes from the state table's applied
   set ``P``; a table whose own applied set ``S_t`` is ahead of ``P`` (it committed, the state did
   not) skips exactly the GTIDs in ``S_t - P``. Nothing is applied twice, nothing is skipped for a
   table that did not get it. Guarded by ``test_crash_between_table_commits_replays_nothing_twice``.
3. **One writer.** The state table's epoch claim fences older writers (see ``state.pipeline_state``),
   and each table write checks that the table is still at the version this writer last saw, or
   moved only by another writer's rearrangement of its files (:mod:`.table_handles`), so a fenced
   writer fails before it can move a table backwards.
4. **The sink never goes backwards or skips ahead.** :meth:`DeltaSink.open` resumes from the sink
   when the requested start is contained in what the sink applied, and refuses a start that the
   sink has not reached (a gap) or that diverges from it.
5. **Nothing moves before every table is known writable.** :meth:`DeltaSink.open` loads the handle of
   every configured table (and moves a version 0.1 lake's facts out of commit history) before the
   first batch, so a table feature delta-rs cannot write fails the run with no data moved.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction

from airflow_mysql_cdc.engine.binlog.changes import Transaction as BinlogTransaction
from airflow_mysql_cdc.engine.lake.batch_commit import BatchCommit
from airflow_mysql_cdc.engine.lake.change_table import (
    TableChanges,
    build_change_tables,
)
from airflow_mysql_cdc.engine.lake.delta_layout import (
    COMMIT_DATE_COLUMN,
    COMMIT_METADATA_APPLIED,
    COMMIT_METADATA_BATCH,
    COMMIT_METADATA_EPOCH,
    changelog_schema,
    table_properties,
    target_schema,
)
from airflow_mysql_cdc.engine.lake.evolution import TableEvolution
from airflow_mysql_cdc.engine.lake.layout import LakeRoot
from airflow_mysql_cdc.engine.lake.schema_evolution import (
    SchemaChangeCommit,
    apply_to_tables,
    dropped_columns,
    source_fields,
)
from airflow_mysql_cdc.engine.lake.sink import BatchResult, SinkBehindError, SinkDivergedError
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineState, default_owner
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.lake.state.table_positions import move_legacy_positions, pipeline_app_id
from airflow_mysql_cdc.engine.lake.table_handles import TableHandle, TableHandles
from airflow_mysql_cdc.engine.lake.table_writes import TargetMerge, append_changes
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.values.gtid import GtidSet

log = logging.getLogger(__name__)


class DeltaSink:
    """Applies micro-batches of transactions to a target and a changelog table per source table."""

    def __init__(
        self,
        lake_root: LakeRoot,
        pipeline_id: str,
        *,
        soft_deletes: bool = False,
        owner: str | None = None,
        storage_options: dict[str, str] | None = None,
        lease_s: float = 60.0,
        state_path: str | None = None,
        tables: Sequence[str] = (),
    ) -> None:
        """``state_path`` gives a writer its own state table (a table's catch-up before it joins);
        ``tables`` are loaded and checked at :meth:`open`, before anything is written."""
        self.lake = LakeState(lake_root, pipeline_id, storage_options)
        self.layout = self.lake.layout
        self.pipeline_id = pipeline_id
        self.app_id = pipeline_app_id(pipeline_id)
        self.soft_deletes = soft_deletes
        self.owner = owner or default_owner()
        self.storage_options = storage_options
        self.lease_s = lease_s
        self.tables = tuple(tables)
        self._last_state_commit = time.monotonic()
        self._state_store = self.lake.pipeline_store(state_path, pipeline_id)
        self._state: PipelineState | None = None
        self._handles = TableHandles(self.layout, self.app_id, storage_options)
        self.merge_metrics: deque[dict[str, Any]] = deque(maxlen=1000)
        """delta-rs's metrics of the latest MERGEs (files scanned, removed, added): for benchmarks."""

    # --- lifecycle ----------------------------------------------------------------------------

    def open(self, requested_start: GtidSet, *, rebase: bool = False, keep_members: bool = False) -> GtidSet:
        """Claim the pipeline and return the position to read from.

        ``rebase`` moves a pipeline whose lake is behind or off ``requested_start`` to it, after its
        tables were re-snapshotted (purged binlogs): the membership is cleared, so each table must
        then be admitted again against its new snapshot (:mod:`~airflow_mysql_cdc.engine.apply.admission`),
        unless ``keep_members``: an operator's confirmed ``rebase_checkpoint`` vouches that every member
        table equals its source at ``requested_start``. A start the lake already contains is no
        rebase (a retried rebase run finds its own progress so): the lake never moves backwards.
        """
        previous = self._state_store.read()
        rebasing = _rebasing(previous, requested_start, rebase)
        self._state = self._state_store.claim(
            self.owner, initial_applied=requested_start, lease_s=self.lease_s
        )
        if previous is None or previous.batch_seq == 0:
            self._state = self._state_store.commit(
                self._state, requested_start, self._state.batch_seq, intents={}
            )
        elif rebasing:
            log.warning(
                "sink %s: rebasing the pipeline from %s to %s %s",
                self.layout.root,
                self._state.applied_gtids,
                requested_start,
                "as the operator confirmed; every member table stays a member there"
                if keep_members
                else "after a re-snapshot; every table must join again from its new snapshot",
            )
            self._state = self._state_store.commit(
                self._state,
                requested_start,
                self._state.batch_seq,
                members=dict(self._state.members or {}) if keep_members else {},
                intents={},
            )
        try:
            self._settle_tables()
        except BaseException:
            self.release()
            raise
        log.info(
            "sink %s: claimed epoch %d, resuming from %s",
            self.layout.root,
            self._state.epoch,
            self._state.applied_gtids or "(empty)",
        )
        return self._state.applied_gtids

    def _settle_tables(self) -> None:
        """Move a version 0.1 lake's facts out of commit history, then load and check every table."""
        assert self._state is not None
        refs = [TableRef.parse(name) for name in self.tables]
        self.lake.migrate_snapshots(refs)
        if self._state.intents is None:  # a state written by version 0.1
            paths = [self._handles.path(str(ref), kind) for ref in refs for kind in ("target", "changelog")]
            self._state = move_legacy_positions(self._state_store, self._state, paths, self.app_id)
        for ref in refs:
            for kind in ("target", "changelog"):
                self._handle(str(ref), kind)

    @property
    def applied_gtids(self) -> GtidSet:
        assert self._state is not None, "open() the sink first"
        return self._state.applied_gtids

    @property
    def epoch(self) -> int:
        assert self._state is not None, "open() the sink first"
        return self._state.epoch

    @property
    def members(self) -> dict[str, str] | None:
        """The tables the pipeline streams (see ``pipeline_state``); None for a state without them."""
        assert self._state is not None, "open() the sink first"
        return self._state.members

    @property
    def is_new(self) -> bool:
        """Nothing was ever applied or admitted: the pipeline's first run."""
        assert self._state is not None, "open() the sink first"
        return self._state.batch_seq == 0 and not self._state.members

    def record_members(self, members: dict[str, str]) -> None:
        """Make ``members`` the pipeline's tables, from its current position on.

        A table that joined was written by its own catch-up (:mod:`~airflow_mysql_cdc.engine.apply.admission`)
        since :meth:`open` loaded it: its handle is loaded again at its first write.
        """
        assert self._state is not None, "open() the sink first"
        changed = set(members).symmetric_difference(self._state.members or {}) | {
            name for name, snapshot in members.items() if (self._state.members or {}).get(name) != snapshot
        }
        self._state = self._state_store.commit(
            self._state, self._state.applied_gtids, self._state.batch_seq, members=members
        )
        self._last_state_commit = time.monotonic()
        self._handles.forget(changed)

    def heartbeat_if_due(self) -> None:
        """Renew the lease when no batch has done it lately (an idle live stream)."""
        if self._state is not None and time.monotonic() - self._last_state_commit >= self.lease_s / 3:
            self._state = self._state_store.commit(
                self._state, self._state.applied_gtids, self._state.batch_seq
            )
            self._last_state_commit = time.monotonic()

    def release(self) -> None:
        """Let the next instance claim the pipeline at once (the run ended normally)."""
        if self._state is not None:
            self._state_store.commit(
                self._state, self._state.applied_gtids, self._state.batch_seq, release=True
            )
            self._state = None

    # --- applying -----------------------------------------------------------------------------

    def apply(self, transactions: Sequence[BinlogTransaction], position_after: GtidSet) -> BatchResult:
        """Apply one micro-batch; ``position_after`` is the reader's position after its last transaction."""
        return self.apply_change_tables(build_change_tables(transactions), position_after, len(transactions))

    def apply_change_tables(
        self, tables: Mapping[str, TableChanges], position_after: GtidSet, transactions: int
    ) -> BatchResult:
        """Apply one micro-batch already gathered per table (by :func:`.build_change_tables`), or a
        catch-up's whole wave (:class:`~.change_waves.WaveTable`)."""
        batch = self._begin(position_after)
        result = BatchResult(batch.seq, position_after, transactions)
        for name in batch.each(sorted(tables)):
            applied = []
            target = tables[name].without(self._handle(name, "target").already_applied)
            if target.change_count:
                self._merge_target(name, target, batch.final)
                applied.append(target)
            changelog = tables[name].without(self._handle(name, "changelog").already_applied)
            if changelog.change_count:
                self._append_changelog(name, changelog, batch.final, batch.before)
                applied.append(changelog)
            if applied:  # a replay after a crash may have found one of the two already written
                result.rows_by_table[name] = max(changes.change_count for changes in applied)
                result.transactions_by_table[name] = max(changes.transaction_count for changes in applied)
        self._committed(batch)
        return result

    def _begin(self, position_after: GtidSet) -> BatchCommit:
        """The skeleton's first step (:mod:`.batch_commit`): the batch's intent is in the state."""
        assert self._state is not None, "open() the sink first"
        if not self._state.applied_gtids.issubset(position_after):
            raise ValueError("position_after must contain the applied set: the reader went backwards")
        batch_seq = self._intend(position_after)
        state = self._state
        return BatchCommit(
            batch_seq,
            position_after,
            final=self._properties(position_after, batch_seq),
            before=self._preparing(state.applied_gtids),
            assert_owner=lambda: self._state_store.assert_still_owner(state),
        )

    def _intend(self, position_after: GtidSet) -> int:
        """Record the next batch's number and position in the state before any table commits it."""
        state = self._state
        assert state is not None
        batch_seq = state.next_batch_seq
        self._state = self._state_store.commit(
            state, state.applied_gtids, state.batch_seq, intents=state.intending(batch_seq, position_after)
        )
        return batch_seq

    def _committed(self, batch: BatchCommit, members: dict[str, str] | None = None) -> None:
        """The skeleton's last step: the batch's position (and ``members``, if they change) in the
        state; every table now reflects it."""
        assert self._state is not None
        self._state = self._state_store.commit(self._state, batch.position, batch.seq, members=members)
        self._last_state_commit = time.monotonic()
        for handle in self._handles.values():
            handle.already_applied = handle.already_applied - batch.position

    def source_fields(self, name: str) -> dict[str, pa.DataType] | None:
        """The source columns the target of ``name`` has now (None: it has no target table yet)."""
        handle = self._handle(name, "target")
        if handle.table is None:
            return None
        handle.table.update_incremental()
        return source_fields(handle.table)

    def dropped_columns(self, name: str) -> tuple[str, ...]:
        handle = self._handle(name, "target")
        return dropped_columns(handle.table) if handle.table is not None else ()

    def apply_schema_change(
        self,
        gtid: str,
        statement: str,
        commit_timestamp_us: int,
        evolutions: Sequence[TableEvolution],
        position_after: GtidSet,
    ) -> None:
        """Apply one DDL's effect on each table at its position (``position_after`` includes it).

        Tables that leave are marked and removed from the members in the same state commit that
        records the position (:mod:`.departures`); see :mod:`.schema_evolution` for replays.
        """
        batch = self._begin(position_after)
        members = dict(self.members or {})
        commit = SchemaChangeCommit(
            gtid, statement, commit_timestamp_us, batch.before, batch.final, self.soft_deletes
        )
        for evolution in batch.each(evolutions):
            if evolution.leaves:
                members.pop(evolution.table, None)
            if gtid in self._handle(evolution.table, "target").already_applied:
                continue  # a replay: this table committed the change before the crash
            apply_to_tables(
                evolution,
                self._existing(evolution.table, "target"),
                self._existing(evolution.table, "changelog"),
                commit,
            )
            self._handles.refresh(evolution.table)
        self._committed(batch, members=members)

    def _properties(self, position: GtidSet, batch_seq: int) -> CommitProperties:
        """A commit that records batch ``batch_seq``: its app transaction names the batch's intent."""
        assert self._state is not None
        return CommitProperties(
            custom_metadata=self._metadata(position, batch_seq),
            app_transactions=[Transaction(self.app_id, batch_seq)],
            max_commit_retries=0,
        )

    def _preparing(self, position: GtidSet) -> CommitProperties:
        """A commit that only prepares a batch (adds columns): no app transaction, nothing to skip."""
        assert self._state is not None
        return CommitProperties(custom_metadata=self._metadata(position, None), max_commit_retries=0)

    def _metadata(self, position: GtidSet, batch_seq: int | None) -> dict[str, str | int]:
        """For people reading a table's history; never read back (commit history is pruned)."""
        assert self._state is not None
        metadata: dict[str, str | int] = {
            COMMIT_METADATA_APPLIED: str(position),
            COMMIT_METADATA_EPOCH: self._state.epoch,
        }
        if batch_seq is not None:
            metadata[COMMIT_METADATA_BATCH] = batch_seq
        return metadata

    def _existing(self, name: str, kind: str) -> DeltaTable | None:
        """The table, checked to be where this writer left it; None when it does not exist yet."""
        handle = self._handle(name, kind)
        if handle.table is None:
            return None
        return self._handles.checked(handle, pa.schema([]), None, self.epoch)

    # --- tables -------------------------------------------------------------------------------

    def _handle(self, name: str, kind: str) -> TableHandle:
        assert self._state is not None
        return self._handles.get(name, kind, self._state)

    def _merge_target(self, name: str, batch: TableChanges, properties: CommitProperties) -> None:
        handle = self._handle(name, "target")
        key = batch.shape.primary_key
        schema = target_schema(batch.shape.columns)
        target = self._handles.checked(handle, schema, None, self.epoch, table_properties(schema, key))
        merge = TargetMerge.of(batch, source_fields(target), self.soft_deletes, properties)
        self.merge_metrics.append(self._handles.commit(handle, self.epoch, merge.execute))

    def _append_changelog(
        self, name: str, batch: TableChanges, properties: CommitProperties, before: CommitProperties
    ) -> None:
        """Append the batch's changes (:func:`.table_writes.append_changes`)."""
        handle = self._handle(name, "changelog")
        schema = changelog_schema(batch.shape.columns)
        partitions = [COMMIT_DATE_COLUMN]
        self._handles.checked(
            handle, schema, partitions, self.epoch, table_properties(schema, (), partitions)
        )

        def append(table: DeltaTable) -> None:
            def prepared(version: int) -> None:
                handle.expected_version = version

            append_changes(table, batch, schema, properties, before, prepared)

        self._handles.commit(handle, self.epoch, append)


def _rebasing(previous: PipelineState | None, requested_start: GtidSet, rebase: bool) -> bool:
    """Whether :meth:`DeltaSink.open` moves the pipeline to ``requested_start``; raises when the lake is
    behind or off it and no rebase was asked for."""
    if previous is None or previous.batch_seq == 0:
        return False
    sink_applied = previous.applied_gtids
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
