"""Run a table's snapshot: plan or resume, read windows (in parallel where available), commit chunks.

Invariant: whatever runs the windows (one process, or Spark tasks each with its own connections and
replication server_id) and writes their rows' files, only this driver commits them, a wave of chunks
per commit with their progress records, so progress and data stay together (see
:mod:`.lake_commits`). A window is a pure read of the source: rerunning it is always safe.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from airflow_mysql_cdc.engine.errors import NextStep
from airflow_mysql_cdc.engine.lake.data_files import executor_writes_supported
from airflow_mysql_cdc.engine.lake.layout import LakeRoot
from airflow_mysql_cdc.engine.lake.table_shape import Compatibility, Shape, compatibility
from airflow_mysql_cdc.engine.mysql.definition import TableDefinition
from airflow_mysql_cdc.engine.mysql.schema import TableMetadata, TableRef, read_table_metadata
from airflow_mysql_cdc.engine.runtime.progress import PROGRESS_INTERVAL_S, Cadence
from airflow_mysql_cdc.engine.snapshot.chunks import plan_chunks, require_row_key
from airflow_mysql_cdc.engine.snapshot.lake_commits import DeltaSnapshotWriter, SnapshotProgress
from airflow_mysql_cdc.engine.snapshot.result import TableSnapshotResult
from airflow_mysql_cdc.engine.snapshot.table_definition import (
    DefinitionChanged,
    DefinitionUnstableError,
    SnapshotTableDroppedError,
    check_unchanged,
)
from airflow_mysql_cdc.engine.snapshot.window_task import (
    FileTarget,
    WindowOutcome,
    WindowRunner,
    WindowTask,
    WrittenWindow,
    run_sequentially,
)
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint

log = logging.getLogger("airflow_mysql_cdc.snapshot")


def snapshot_table(
    endpoint: MySqlEndpoint,
    lake_root: LakeRoot,
    table: str,
    *,
    chunk_size: int = 50_000,
    run_windows: WindowRunner = run_sequentially,
    restart: bool = False,
    base_server_id: int | None = None,
    storage_options: dict[str, str] | None = None,
    max_restarts: int = 3,
    executor_writes: bool = True,
    progress_interval_s: float = PROGRESS_INTERVAL_S,
) -> TableSnapshotResult:
    """Snapshot ``table`` into the lake, resuming an unfinished snapshot unless ``restart``.

    A finished snapshot is taken again only with ``restart`` (a re-snapshot), which replaces the
    table's contents. A DDL landing on the table during its snapshot restarts it with the new
    definition (:mod:`.table_definition`), at most ``max_restarts`` times. Whoever runs a window
    writes its rows (:mod:`~airflow_mysql_cdc.engine.lake.data_files`) unless ``executor_writes`` is
    False or the lake is on a store executors do not write to; then the rows come to this driver.

    Progress (chunks done/total, rows/s, ETA) is logged every ``progress_interval_s`` and when the
    table is done (:mod:`~airflow_mysql_cdc.engine.runtime.progress`).
    """
    started = time.monotonic()
    ref = TableRef.parse(table)
    for restarts in range(max_restarts + 1):
        try:
            result = _snapshot_once(
                endpoint, lake_root, ref, chunk_size, run_windows, restart or restarts > 0,
                base_server_id, storage_options, started, executor_writes, progress_interval_s,
            )  # fmt: skip
        except DefinitionChanged as change:
            log.warning("snapshot of %s: %s; it starts again with the new definition", ref, change)
            continue
        return replace(result, restarts=restarts)
    raise DefinitionUnstableError(
        f"the definition of {ref} changed during each of {max_restarts + 1} attempts to snapshot it (a "
        "migration still running?). Nothing of it was streamed; run the snapshot again once the migration "
        "is over."
    ).then(NextStep.run_again())


def _snapshot_once(
    endpoint: MySqlEndpoint,
    lake_root: LakeRoot,
    ref: TableRef,
    chunk_size: int,
    run_windows: WindowRunner,
    restart: bool,
    base_server_id: int | None,
    storage_options: dict[str, str] | None,
    started: float,
    executor_writes: bool,
    progress_interval_s: float = PROGRESS_INTERVAL_S,
) -> TableSnapshotResult:
    metadata, definition, writer, progress, resumed = _plan_or_resume(
        endpoint, lake_root, ref, chunk_size, restart, storage_options
    )
    columns, key_columns = definition.column_types, metadata.row_key_columns
    pending = progress.pending
    writes = executor_writes and executor_writes_supported(writer.path)
    target = FileTarget(writer.path, dict(storage_options or {})) if writes else None
    tasks = [
        WindowTask(
            endpoint, ref, tuple(columns), metadata.key_columns, key_columns, chunk,
            None if base_server_id is None else base_server_id + chunk.index, target,
        )
        for chunk in pending
    ]  # fmt: skip
    rows = count = 0
    cadence = Cadence(progress_interval_s)
    check_unchanged(endpoint, ref, definition)
    try:
        for wave in run_windows(tasks):
            check_unchanged(endpoint, ref, definition)  # these windows read the planned definition
            writer.commit_wave(progress, wave)
            count += len(wave)
            rows += sum(_rows(window) for window in wave)
            if cadence.due() or count == len(pending):
                _log_progress(ref, count, len(pending), len(progress.done), len(progress.plan), rows, started)
    except (DefinitionChanged, SnapshotTableDroppedError):
        raise
    except Exception:
        check_unchanged(endpoint, ref, definition)  # a window that failed because the table changed
        raise
    return TableSnapshotResult(
        table=str(ref),
        snapshot_id=progress.snapshot_id,
        resumed=resumed,
        chunks_total=len(progress.plan),
        chunks_run=len(pending),
        rows=rows,
        stream_start=progress.stream_start,
        consistent_point=progress.consistent_point,
        duration_s=round(time.monotonic() - started, 3),
    )


def _rows(window: WindowOutcome) -> int:
    return window.rows if isinstance(window, WrittenWindow) else window.rows.num_rows


def _log_progress(
    ref: TableRef, run: int, to_run: int, done: int, total: int, rows: int, started: float
) -> None:
    elapsed = max(time.monotonic() - started, 1e-9)
    eta = elapsed / run * (to_run - run)
    log.info(
        "snapshot of %s: %d/%d chunks done, %d rows (%.0f rows/s), %s",
        ref, done, total, rows, rows / elapsed, f"ETA {eta:.0f}s" if run < to_run else "done",
    )  # fmt: skip


def _redefined(recorded: TableDefinition | None, now: TableDefinition) -> bool:
    """The table is not defined as when its unfinished snapshot began (None: no record to compare)."""
    if recorded is None:
        return False
    return (
        compatibility(Shape.of_definition(recorded), Shape.of_definition(now)).reason
        is not Compatibility.SAME
    )


def _plan_or_resume(
    endpoint: MySqlEndpoint,
    lake_root: LakeRoot,
    ref: TableRef,
    chunk_size: int,
    restart: bool,
    storage_options: dict[str, str] | None,
) -> tuple[TableMetadata, TableDefinition, DeltaSnapshotWriter, SnapshotProgress, bool]:
    """The table now, its writer, and the snapshot to run: the unfinished one (resumed: True) if the
    table is defined as when it began, else a new plan (a finished snapshot is kept as it is)."""
    with endpoint.connect() as connection, connection.cursor() as cursor:
        metadata = require_row_key(read_table_metadata(cursor, ref), ref)
        definition = TableDefinition.of(metadata)
        writer = DeltaSnapshotWriter(lake_root, ref, definition.column_types, storage_options)
        progress = writer.progress()
        resumed = progress is not None and not progress.complete and not restart
        if (
            progress is not None
            and resumed
            and (not writer.fits_columns() or _redefined(progress.definition, definition))
        ):
            log.warning("snapshot of %s: the table's columns changed since it began; it starts again", ref)
            resumed = False
        if progress is None or restart or not resumed and not progress.complete:
            plan = plan_chunks(connection, metadata, chunk_size)
            progress = writer.start(plan, metadata.key_columns, definition)
            log.info("snapshot of %s: %d chunk(s) of up to %d rows planned", ref, len(plan), chunk_size)
        elif resumed:
            log.info(
                "snapshot of %s: resuming, %d of %d chunk(s) done",
                ref,
                len(progress.done),
                len(progress.plan),
            )
    assert progress is not None
    return metadata, definition, writer, progress, resumed
