"""Exactly-once application of binlog micro-batches to Delta tables with delta-rs.

Invariants:

1. **Data and position commit together, per table.** A batch is first *intended* in the state
   (its number and the position after it), then every commit of its data to a target or changelog
   table carries the Delta app transaction ``(airflow_mysql_cdc:<pipeline id>, batch number)``, and
   only then does the state record the position (with its next commit, the one that intends the
   next batch: :meth:`.state.lease.Lease.defer`). A table therefore never holds data without the
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
6. **A wrong table stops, alone.** A batch whose target MERGE did not do what its events imply
   (:mod:`.batch_check`), and an open that finds a streamed table changed by another writer since
   the pipeline's last commit (:mod:`.outside_changes`), stop that table at that position, and only
   it (:mod:`.table_stops`); the open records the versions it vouched for in the state.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable

from airflow_mysql_cdc.engine.binlog.changes import Transaction as BinlogTransaction
from airflow_mysql_cdc.engine.lake.batch_check import judge_merge
from airflow_mysql_cdc.engine.lake.batch_commit import BatchCommit
from airflow_mysql_cdc.engine.lake.change_table import TableChanges, build_change_tables
from airflow_mysql_cdc.engine.lake.delta_layout import (
    COMMIT_DATE_COLUMN,
    changelog_schema,
    target_schema,
)
from airflow_mysql_cdc.engine.lake.evolution import TableEvolution
from airflow_mysql_cdc.engine.lake.evolution_writes import (
    SchemaChangeCommit,
    apply_to_tables,
    dropped_columns,
    source_fields,
)
from airflow_mysql_cdc.engine.lake.layout import LakeRoot
from airflow_mysql_cdc.engine.lake.sink import BatchResult, decide_rebase
from airflow_mysql_cdc.engine.lake.state.lease import Lease
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineState, default_owner
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.lake.state.table_positions import move_legacy_positions, pipeline_app_id
from airflow_mysql_cdc.engine.lake.table_handles import TableHandle, TableHandles
from airflow_mysql_cdc.engine.lake.table_stops import mark_stopped, reasons_to_stop, require_vouched
from airflow_mysql_cdc.engine.lake.table_writes import TargetMerge, append_changes
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject

log = logging.getLogger(__name__)


class DeltaSink:
    """Applies micro-batches of transactions to a target and a changelog table per source table."""

    def __init__(
        self,
        lake: LakeState,
        *,
        soft_deletes: bool = False,
        owner: str | None = None,
        lease_s: float = 60.0,
        state_path: str | None = None,
        tables: Sequence[str] = (),
        unsettled: Mapping[str, GtidSet] | None = None,
    ) -> None:
        """The sink of ``lake``'s pipeline (its id names it). ``state_path``: a writer's own state
        table (a catch-up's); ``tables``: loaded and checked at :meth:`open`; ``unsettled``: checked
        by bounds for a while (``ApplyConfig.unsettled``)."""
        self.lake = lake
        self.layout = lake.layout
        self.pipeline_id = pipeline_id = lake.pipeline_id
        self.app_id = pipeline_app_id(pipeline_id)
        self.soft_deletes = soft_deletes
        self.owner = owner or default_owner()
        self.storage_options = storage_options = lake.storage_options
        self.lease_s = lease_s
        self.tables = tuple(tables)
        self.unsettled = dict(unsettled or {})
        self._catch_up = state_path is not None
        self._state_store = self.lake.pipeline_store(state_path, pipeline_id)
        self._lease: Lease | None = None
        self._handles = TableHandles(self.layout, self.app_id, storage_options)
        self.merge_metrics: deque[JsonObject] = deque(maxlen=1000)  # delta-rs's, latest MERGEs
        self.check_merges = True  # each MERGE against its batch's events; off only to measure the check
        self._stopped: set[str] = set()  # tables this sink stopped: it never writes them again
        self.stopped_at_open: list[TableEvolution] = []  # the Sink contract's

    @classmethod
    def at(
        cls,
        lake_root: LakeRoot,
        pipeline_id: str,
        *,
        storage_options: Mapping[str, str] | None = None,
        **options: Any,
    ) -> DeltaSink:
        """The sink of pipeline ``pipeline_id`` in the lake at ``lake_root`` (``options``: as above)."""
        return cls(LakeState(lake_root, pipeline_id, storage_options), **options)

    # --- lifecycle ----------------------------------------------------------------------------

    def open(self, requested_start: GtidSet, *, rebase: bool = False, keep_members: bool = False) -> GtidSet:
        """Claim the pipeline and return the position to read from.

        ``rebase`` moves a pipeline whose lake is behind or off ``requested_start`` to it, after its
        tables were re-snapshotted (purged binlogs): the membership is cleared, so each table must
        then be admitted again against its new snapshot (:mod:`~airflow_mysql_cdc.engine.apply.admission`),
        unless ``keep_members``: an operator's confirmed ``rebase_checkpoint`` vouches that every member
        table equals its source at ``requested_start``. A start the lake already contains is no
        rebase (a retried rebase run finds its own progress so): the lake never moves backwards.
        Only a state that holds no batch (none committed, none intended) takes any start it is
        given: after a crash in the first batch, some table may hold that batch already.
        """
        previous = self._state_store.read()
        rebasing = decide_rebase(previous, requested_start, rebase)
        self._lease = lease = Lease.claim(
            self._state_store, self.owner, requested_start, lease_s=self.lease_s
        )
        if previous is None or previous.holds_no_batch:
            lease.commit(requested_start, intents={})
        elif rebasing:
            log.warning(
                "sink %s: rebasing the pipeline from %s to %s %s",
                self.layout.root,
                lease.state.applied_gtids,
                requested_start,
                "as the operator confirmed; every member table stays a member there"
                if keep_members
                else "after a re-snapshot; every table must join again from its new snapshot",
            )
            # The intents go with the old position; their numbers stay used (a table may carry one,
            # and holds at most the rebase's position, as it was re-snapshotted or vouched for).
            lease.commit(
                requested_start,
                lease.state.last_batch_seq,
                members=dict(lease.state.members or {}) if keep_members else {},
                intents={},
            )
        try:
            self._settle_tables()
            self._stop_tables_changed_outside()
        except BaseException:
            self.release()
            raise
        log.info(
            "sink %s: claimed epoch %d, resuming from %s",
            self.layout.root,
            lease.state.epoch,
            lease.state.applied_gtids or "(empty)",
        )
        return lease.state.applied_gtids

    def _settle_tables(self) -> None:
        """Move a version 0.1 lake's facts out of commit history, then load and check every table."""
        lease = self._held()
        refs = [TableRef.parse(name) for name in self.tables]
        self.lake.migrate_snapshots(refs)
        if lease.state.intents is None:  # a state written by version 0.1
            paths = [self._handles.path(str(ref), kind) for ref in refs for kind in ("target", "changelog")]
            move_legacy_positions(lease, paths, self.app_id)
        for ref, kind in itertools.product(refs, ("target", "changelog")):
            self._handle(str(ref), kind)

    def _stop_tables_changed_outside(self) -> None:
        """Invariant 6: stop the streamed tables the pipeline cannot vouch for; record the rest."""
        lease = self._held()
        checked = dict(lease.state.checked_versions or {})
        members = None if self._catch_up else self.members  # a catch-up streams all its tables
        stopping = reasons_to_stop(self.tables, members, self._handle, self.lake, checked)
        if stopping:
            batch = self._begin(self.applied_gtids)  # a batch of no changes: the stops, at the position
            self._committed(batch, members=self._leave(stopping, batch), checked_versions=checked)
            self.stopped_at_open = stopping
        elif checked != (lease.state.checked_versions or {}):
            lease.commit(checked_versions=checked)

    def _held(self) -> Lease:
        assert self._lease is not None and self._lease.held, "open() the sink first"
        return self._lease

    @property
    def _state(self) -> PipelineState:
        return self._held().state

    @property
    def applied_gtids(self) -> GtidSet:
        return self._state.applied_gtids

    @property
    def epoch(self) -> int:
        return self._state.epoch

    @property
    def members(self) -> dict[str, str] | None:
        """The tables the pipeline streams (see ``pipeline_state``); None for a state without them."""
        return self._state.members

    @property
    def is_new(self) -> bool:
        """Nothing was ever applied or admitted: the pipeline's first run."""
        return self._state.batch_seq == 0 and not self._state.members

    def record_members(self, members: dict[str, str]) -> None:
        """Make ``members`` the pipeline's tables, from its current position on.

        A table that joined was written by its own catch-up (:mod:`~airflow_mysql_cdc.engine.apply.admission`)
        since :meth:`open` loaded it: its handle is loaded again at its first write.
        """
        changed = set(members).symmetric_difference(self._state.members or {}) | {
            name for name, snapshot in members.items() if (self._state.members or {}).get(name) != snapshot
        }
        checked = {
            key: v
            for key, v in (self._state.checked_versions or {}).items()
            if key.split(":")[1] not in changed
        }
        self._held().commit(members=members, checked_versions=checked)
        self._handles.forget(changed)

    def heartbeat_if_due(self) -> None:
        """Renew the lease when no batch has done it lately (an idle live stream)."""
        if self._lease is not None:
            self._lease.heartbeat_if_due()

    def release(self) -> None:
        """Let the next instance claim the pipeline at once (the run ended normally)."""
        if self._lease is not None:
            self._lease.release()

    # --- applying -----------------------------------------------------------------------------

    def apply(self, transactions: Sequence[BinlogTransaction], position_after: GtidSet) -> BatchResult:
        """Apply one micro-batch; ``position_after`` is the reader's position after its last transaction."""
        return self.apply_change_tables(build_change_tables(transactions), position_after, len(transactions))

    def apply_change_tables(
        self, tables: Mapping[str, TableChanges], position_after: GtidSet, transactions: int
    ) -> BatchResult:
        """Apply one micro-batch already gathered per table (by :func:`.build_change_tables`), or a
        catch-up's whole wave (:class:`~.change_waves.WaveTable`)."""
        gtids = position_after - self.applied_gtids
        batch = self._begin(position_after)
        result = BatchResult(batch.seq, position_after, transactions)
        stopping: list[TableEvolution] = []
        for name in batch.each(sorted(tables)):
            if name in self._stopped:
                continue  # it left the pipeline in this run; the reader drops its changes as well
            applied = []
            target = tables[name].without(self._handle(name, "target").already_applied)
            if target.change_count:
                stopping += self._merge_target(name, target, batch.final, gtids)
                applied.append(target)
            changelog = tables[name].without(self._handle(name, "changelog").already_applied)
            if changelog.change_count:  # the binlog's changes are right: the changelog gets them
                self._append_changelog(name, changelog, batch.final, batch.before)
                applied.append(changelog)
            if applied:  # a replay after a crash may have found one of the two already written
                result.rows_by_table[name] = max(changes.change_count for changes in applied)
                result.transactions_by_table[name] = max(changes.transaction_count for changes in applied)
        self._committed(batch, members=self._leave(stopping, batch) if stopping else None)
        result.stopped = stopping
        return result

    def _leave(self, evolutions: Sequence[TableEvolution], batch: BatchCommit) -> dict[str, str]:
        """Mark each table stopped (with ``batch``'s app transaction); the members without them."""
        members = dict(self.members or {})
        commit = SchemaChangeCommit("", "", 0, batch.before, batch.final, self.soft_deletes)
        for evolution in evolutions:
            mark_stopped(evolution, self._existing(evolution.table, "target"), commit, members, self.lake)
            self._handles.refresh(evolution.table)
            self._stopped.add(evolution.table)
        return members

    def _begin(self, position_after: GtidSet) -> BatchCommit:
        """The skeleton's first step (:mod:`.batch_commit`): the batch's intent is in the state."""
        lease = self._held()
        if not lease.state.applied_gtids.issubset(position_after):
            raise ValueError("position_after must contain the applied set: the reader went backwards")
        before = lease.state.applied_gtids
        batch_seq = self._intend(position_after)
        state = lease.state
        assert_owner = lambda: self._state_store.assert_still_owner(state)  # noqa: E731
        return BatchCommit.of(batch_seq, position_after, before, self.app_id, state.epoch, assert_owner)

    def _intend(self, position_after: GtidSet) -> int:
        """Record the next batch's number and position in the state before any table commits it."""
        lease = self._held()
        batch_seq = lease.state.next_batch_seq
        lease.commit(intents=lease.state.intending(batch_seq, position_after))
        return batch_seq

    def _committed(
        self,
        batch: BatchCommit,
        members: dict[str, str] | None = None,
        checked_versions: dict[str, int] | None = None,
    ) -> None:
        """The skeleton's last step: the batch's position (and ``members``, ``checked_versions``, if
        they change) in the state; every table now reflects it. A plain batch's position is written
        by the next batch's intent (:meth:`.state.lease.Lease.defer`): one state commit per batch."""
        if members is None and checked_versions is None:
            self._held().defer(batch.position, batch.seq)
        else:
            self._held().commit(batch.position, batch.seq, members=members, checked_versions=checked_versions)
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
        records the position (:mod:`.departures`); see :mod:`.evolution_writes` for replays.
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

    def _existing(self, name: str, kind: str) -> DeltaTable | None:
        """The table, checked to be where this writer left it; None when it does not exist yet."""
        handle = self._handle(name, kind)
        if handle.table is None:
            return None
        return self._handles.checked(handle, pa.schema([]), None, self.epoch)

    # --- tables -------------------------------------------------------------------------------

    def _handle(self, name: str, kind: str) -> TableHandle:
        return self._handles.get(name, kind, self._state)

    def _merge_target(
        self, name: str, batch: TableChanges, properties: CommitProperties, gtids: GtidSet
    ) -> list[TableEvolution]:
        """MERGE the batch into the target; the table's stop if that differs from its events' sum."""
        handle = require_vouched(self._handle(name, "target"))
        schema, key = target_schema(batch.shape.columns), batch.shape.primary_key
        target = self._handles.checked(handle, schema, None, self.epoch, key)
        merge = TargetMerge.of(batch, source_fields(target), self.soft_deletes, properties)
        metrics = self._handles.commit(handle, self.epoch, merge.execute)
        self.merge_metrics.append(metrics)
        expected = batch.expected_merge().within(gtids, self.unsettled.get(name))
        wrong = self.check_merges and judge_merge(name, str(gtids), expected, metrics, self.soft_deletes)
        return [TableEvolution.stopping(name, wrong.reason())] if wrong else []

    def _append_changelog(
        self, name: str, batch: TableChanges, properties: CommitProperties, before: CommitProperties
    ) -> None:
        """Append the batch's changes (:func:`.table_writes.append_changes`)."""
        handle = require_vouched(self._handle(name, "changelog"))
        schema = changelog_schema(batch.shape.columns)
        self._handles.checked(handle, schema, [COMMIT_DATE_COLUMN], self.epoch)

        def append(table: DeltaTable) -> None:
            def prepared(version: int) -> None:
                handle.expected_version = version

            append_changes(table, batch, schema, properties, before, prepared)

        self._handles.commit(handle, self.epoch, append)
