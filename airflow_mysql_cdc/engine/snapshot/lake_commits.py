"""A snapshot's rows go into the target Delta table; its progress into the table's snapshot log.

Invariant: a chunk is done exactly when the target table holds its commit. Each chunk's record
(bounds, low and high watermark, row count) is written to the snapshot log first, under a link
that the chunk's commit of rows then carries as a Delta app transaction; the snapshot's first
commit empties the table (a re-snapshot replaces its contents) and ties the plan and the
definition read to it the same way (:mod:`~airflow_mysql_cdc.engine.lake.state.snapshot_log`). So
progress cannot disagree with the data: a chunk killed before its commit is redone (its record is
on no committed chain), one killed after it is not, and a retried chunk never duplicates rows
(``test_killed_snapshot_resumes_at_the_next_unfinished_chunk``). Nothing is read from the table's
commit history, which Delta's log clean-up deletes (version 0.1 kept the records there).

After a (re-)snapshot the table's rows are as of the chunks' watermarks, and the stream's snapshot
filter, not the sink's replay detection, decides which changes it already has.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, TableNotFoundError
from deltalake.transaction import AddAction

from airflow_mysql_cdc.engine.errors import LakeMismatchError, NextStep
from airflow_mysql_cdc.engine.lake.data_files import require_written
from airflow_mysql_cdc.engine.lake.delta_layout import (
    ROW_KEY_PROPERTY,
    snapshot_rows,
    table_properties,
    target_schema,
)
from airflow_mysql_cdc.engine.lake.file_statistics import sync_statistics_columns
from airflow_mysql_cdc.engine.lake.foreign_commits import check_writable
from airflow_mysql_cdc.engine.lake.layout import LakeRoot
from airflow_mysql_cdc.engine.lake.state.own_commits import own_commit
from airflow_mysql_cdc.engine.lake.state.snapshot_log import SNAPSHOT_APP_ID, snapshot_transaction
from airflow_mysql_cdc.engine.lake.state.snapshot_records import (
    ChunkBounds,
    ChunkDone,
    SnapshotRecord,
    SnapshotStart,
)
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.mysql.definition import TableDefinition
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.snapshot.change_filter import SnapshottedChunk
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.key_codec import decode_key, encode_key
from airflow_mysql_cdc.engine.snapshot.window import ChunkSnapshot
from airflow_mysql_cdc.engine.snapshot.window_task import WindowOutcome, WrittenWindow
from airflow_mysql_cdc.engine.values.gtid import GtidSet

SNAPSHOT_COMMIT_METADATA = "airflow_mysql_cdc.snapshot_commit"
"""Commit metadata naming the snapshot and phase a commit belongs to: for people reading the history;
never read back (version 0.1 kept whole records under ``airflow_mysql_cdc.snapshot``)."""


class SnapshotInterleavedError(LakeMismatchError, RuntimeError):
    """Another writer committed to a target table while its snapshot wrote it."""


class SnapshotIncompleteError(LakeMismatchError, RuntimeError):
    """The table's latest snapshot has unfinished chunks: stream it only after the snapshot ends."""


@dataclass(frozen=True)
class DoneChunk:
    chunk: Chunk
    low_watermark: GtidSet
    high_watermark: GtidSet
    rows: int
    high_read_us: int | None = None


@dataclass
class SnapshotProgress:
    snapshot_id: str
    key: tuple[str, ...]
    plan: list[Chunk]
    done: dict[int, DoneChunk] = field(default_factory=dict)
    definition: TableDefinition | None = None
    """The table's definition the snapshot read (None: a snapshot taken before it was recorded)."""

    @property
    def complete(self) -> bool:
        return len(self.done) == len(self.plan)

    def require_complete(self, table: object) -> None:
        """Refuse to stream a table whose rows are partial (the filter would lack watermarks too)."""
        if not self.complete:
            raise SnapshotIncompleteError(
                f"the snapshot of {table} has {len(self.pending)} unfinished chunk(s); finish it "
                "(rerun the snapshot: it resumes) before streaming changes into the table"
            )

    @property
    def pending(self) -> list[Chunk]:
        return [chunk for chunk in self.plan if chunk.index not in self.done]

    @property
    def stream_start(self) -> GtidSet:
        """Where streaming must start for this table: the earliest (intersection of) low watermarks."""
        lows = [done.low_watermark for done in self.done.values()]
        start = lows[0] if lows else GtidSet()
        for low in lows[1:]:
            start &= low
        return start

    @property
    def consistent_point(self) -> GtidSet:
        """The smallest position at which the table is exact: the union of its chunks' high watermarks.

        Each chunk reflects the source as of its own high watermark ``H_i``; a stream from the low
        watermarks makes chunk ``i`` exact once it passed ``H_i``, so the whole table is exact at any
        position containing every ``H_i``, and at none before (a chunk would still be ahead).
        """
        point = GtidSet()
        for done in self.done.values():
            point |= done.high_watermark
        return point

    def snapshotted_chunks(self) -> list[SnapshottedChunk]:
        done = self.done.values()
        return [SnapshottedChunk(chunk.chunk, chunk.high_watermark, chunk.high_read_us) for chunk in done]


def _created_with(schema: pa.Schema, key: Sequence[str]) -> dict[str, str]:
    """A target's properties when its snapshot creates it, but its row key: ``write_deltalake`` refuses
    a property it does not know on create, and the snapshot log records the key."""
    return {name: value for name, value in table_properties(schema, key).items() if name != ROW_KEY_PROPERTY}


def chunk_bounds(chunk: Chunk) -> ChunkBounds:
    """How a chunk's bounds are recorded: exact JSON of its keys (:mod:`.key_codec`)."""
    return ChunkBounds(chunk.index, encode_key(chunk.lower), encode_key(chunk.upper))


def _chunk(bounds: ChunkBounds) -> Chunk:
    return Chunk(bounds.index, decode_key(bounds.lower), decode_key(bounds.upper))


def read_snapshot_progress(lake: LakeState, ref: TableRef) -> SnapshotProgress | None:
    """The snapshot progress of a table's lake copy; None if the table or its snapshot does not exist."""
    return progress_from_records(lake.snapshot_records(ref))


def progress_from_records(records: Sequence[SnapshotRecord]) -> SnapshotProgress | None:
    """The latest snapshot's plan and finished chunks from its records (newest first, start last)."""
    start = next((record for record in records if isinstance(record, SnapshotStart)), None)
    if start is None:
        return None
    progress = SnapshotProgress(
        snapshot_id=start.snapshot_id,
        key=start.key,
        plan=[_chunk(bounds) for bounds in start.plan],
        definition=start.table_definition(),
    )
    for done in records:
        if not isinstance(done, ChunkDone) or done.snapshot_id != progress.snapshot_id:
            continue
        chunk = _chunk(done.chunk)
        progress.done.setdefault(
            chunk.index,
            DoneChunk(chunk, done.low_watermark, done.high_watermark, done.rows, done.high_read_us),
        )
    return progress


class DeltaSnapshotWriter:
    def __init__(
        self,
        lake_root: LakeRoot,
        ref: TableRef,
        columns: Sequence[ColumnType],
        storage_options: dict[str, str] | None = None,
    ) -> None:
        self.state = LakeState(lake_root, storage_options=storage_options)
        self.path = self.state.layout.target(ref.schema, ref.table)
        self.ref = ref
        self.columns = tuple(columns)
        self.storage_options = storage_options
        self._loaded: DeltaTable | None = None
        self._log = self.state.snapshot_log(ref)
        self._head: int | None = None
        """The link of the newest committed record: the next record continues it."""

    def _table(self) -> DeltaTable | None:
        """The target table, loaded once: a write through the object advances its state, and loading
        it again for every chunk replayed the whole log since the last checkpoint (16 ms per chunk
        after 56 commits, growing with every chunk). No one else writes the table during a snapshot
        (streaming waits for it), and a commit that did interleave would fail ours, which never
        retries (``max_commit_retries=0``)."""
        if self._loaded is None:
            try:
                self._loaded = DeltaTable(self.path, storage_options=self.storage_options)
            except TableNotFoundError:
                return None
        return self._loaded

    def progress(self) -> SnapshotProgress | None:
        """The latest snapshot's plan and finished chunks (a version 0.1 table's are moved first)."""
        table = self._table()
        if table is None:
            return None
        check_writable(table, f"target of {self.ref}", updates_rows=True)  # before any row moves
        self.state.migrate_snapshots([self.ref])
        link = table.transaction_version(SNAPSHOT_APP_ID)
        self._head = self._log.head(link)
        return progress_from_records(self.state.snapshot_records(self.ref, table))

    def fits_columns(self) -> bool:
        """The target holds exactly this snapshot's columns and types (a resumed snapshot's chunks
        were read with the definition it has now)."""
        table = self._table()
        if table is None:
            return False
        lake = pa.schema(table.schema().to_arrow())
        wanted = target_schema(self.columns)
        return [(f.name, f.type) for f in lake] == [(f.name, f.type) for f in wanted]

    def start(
        self, plan: Sequence[Chunk], key: Sequence[str], definition: TableDefinition | None = None
    ) -> SnapshotProgress:
        """Empty the table (create it if needed), record the plan and the definition read: one commit."""
        snapshot_id = uuid.uuid4().hex
        record = SnapshotStart(
            snapshot_id,
            tuple(key),
            tuple(chunk_bounds(chunk) for chunk in plan),
            definition.to_json() if definition is not None else None,
        )
        schema = target_schema(self.columns)
        empty = schema.empty_table()
        table = self._table()
        link = self._log.intend(record, previous=None)
        if table is not None:  # a re-snapshot: the columns (and their statistics) may change
            sync_statistics_columns(table, key, CommitProperties(max_commit_retries=0), schema=schema)
        write_deltalake(
            table if table is not None else self.path,
            empty,
            mode="overwrite",
            schema_mode="overwrite",
            storage_options=None if table is not None else self.storage_options,
            commit_properties=own_commit(self._properties(record, link), table),
            configuration=_created_with(schema, key) if table is None else None,
        )
        self._head = link
        return SnapshotProgress(snapshot_id, tuple(key), list(plan), definition=definition)

    def commit_wave(self, progress: SnapshotProgress, wave: Sequence[WindowOutcome]) -> None:
        """Commit a wave of finished windows: their rows and their chunks' records, one Delta commit.

        Written windows (files an executor wrote) are checked to be where the driver sees them, then
        added by one transaction; windows that came back with their rows (a lake executors do not
        write to) are written here, one commit each. Each chunk's record is written first and the
        commit carries the newest one's link; records link back to the one before, so the commit
        makes every record of the wave part of the chain at once.
        """
        written = [window for window in wave if isinstance(window, WrittenWindow)]
        for window in wave:
            if isinstance(window, ChunkSnapshot):
                self._write_rows(progress, window)
        if not written:
            return
        files = [file for window in written for file in window.files]
        require_written(self.path, files, self.storage_options)
        table = self._table()
        assert table is not None, "start() the snapshot first"
        records = [self._chunk_record(progress, window, window.rows) for window in written]
        link = self._log.intend_all(records, previous=self._head)
        version = table.version()
        try:
            table.create_write_transaction(
                [
                    AddAction(file.path, file.size, {}, file.modification_time_ms, True, file.stats)
                    for file in files
                ],
                mode="append",
                schema=target_schema(self.columns),
                commit_properties=own_commit(self._properties(records[-1], link), table),
            )
        except CommitFailedError:
            raise self._interleaved() from None
        # Unlike a write, this commit does not advance the object: load what follows, which must be
        # exactly our commit (another writer's commit before ours failed it above: no retries).
        table.update_incremental()
        if table.version() != version + 1:
            raise self._interleaved()
        self._head = link
        for window in written:
            self._done(progress, window, window.rows)

    def _interleaved(self) -> SnapshotInterleavedError:
        return SnapshotInterleavedError(
            f"another writer committed to the target of {self.ref} while its snapshot was writing it, so "
            "the snapshot's rows and that writer's changes cannot both be right. Nothing may write a table "
            "during its snapshot: stop that writer (or the job that compacts the table), then re-snapshot "
            "the table, which replaces its contents: resuming would keep whatever that writer added."
        ).then(NextStep.resnapshot(self.ref))

    def _write_rows(self, progress: SnapshotProgress, window: ChunkSnapshot) -> None:
        """A window's rows written and committed by this driver (lakes executors do not write to)."""
        data = snapshot_rows(self.columns, window.rows)
        record = self._chunk_record(progress, window, data.num_rows)
        table = self._table()
        assert table is not None, "start() the snapshot first"
        link = self._log.intend(record, previous=self._head)
        properties = own_commit(self._properties(record, link), table)
        write_deltalake(table, data, mode="append", commit_properties=properties)
        self._head = link
        self._done(progress, window, data.num_rows)

    @staticmethod
    def _chunk_record(progress: SnapshotProgress, window: WindowOutcome, rows: int) -> ChunkDone:
        return ChunkDone(
            progress.snapshot_id, chunk_bounds(window.chunk), window.low_watermark, window.high_watermark,
            rows, window.high_read_us,
        )  # fmt: skip

    @staticmethod
    def _done(progress: SnapshotProgress, window: WindowOutcome, rows: int) -> None:
        progress.done[window.chunk.index] = DoneChunk(
            window.chunk, window.low_watermark, window.high_watermark, rows, window.high_read_us
        )

    @staticmethod
    def _properties(record: SnapshotStart | ChunkDone, link: int) -> CommitProperties:
        return CommitProperties(
            custom_metadata={
                SNAPSHOT_COMMIT_METADATA: json.dumps({"id": record.snapshot_id, "phase": record.phase})
            },
            app_transactions=[snapshot_transaction(link)],
            max_commit_retries=0,
        )
