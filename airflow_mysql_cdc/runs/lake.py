"""The Airflow worker's one door into the lake: every read (and the one append) a task makes there.

Invariant: on the Airflow side, only this module imports the engine's lake readers
(:mod:`airflow_mysql_cdc.engine.lake.state.store`, the checkpoint log, run placement, snapshot
progress, departures, maintenance bookkeeping), and it imports Delta and Arrow only inside its
functions. The DAG file is parsed for every task, and ``deltalake`` with ``pyarrow`` cost half a
second each time: a module-level import here would put that into every parse
(tests/unit/airflow/pipeline/test_dag_parse.py). Run placement is pure (records and dates) and
imported at once.

Storage options, the lake's layout and the maintenance policy are configuration, not reads: hooks,
operators and the DAG's configuration take them from :mod:`airflow_mysql_cdc.engine.lake.storage`,
:mod:`~airflow_mysql_cdc.engine.lake.layout` and :mod:`~airflow_mysql_cdc.engine.lake.maintenance.policy`
directly. tests/unit/test_package_layers.py holds both rules.

``storage_options`` here are every option delta-rs needs, credentials included
(:meth:`~airflow_mysql_cdc.hooks.lake_storage.LakeStorageHook.get_delta_storage_options`): they
stay in the worker's process; nothing here returns them.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING

from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.runs.run_placement import Placement, RunBeforeFirstIntervalError, place_run

if TYPE_CHECKING:
    import pyarrow as pa

    from airflow_mysql_cdc.engine.lake.checkpoint_log import CheckpointLog
    from airflow_mysql_cdc.engine.lake.departures import Departure
    from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
    from airflow_mysql_cdc.engine.lake.pauses import PauseMark
    from airflow_mysql_cdc.engine.lake.run_changes import RunChanges
    from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineState
    from airflow_mysql_cdc.engine.lake.state.store import LakeState
    from airflow_mysql_cdc.engine.snapshot.lake_commits import SnapshotProgress
    from airflow_mysql_cdc.engine.values.gtid import GtidSet

__all__ = [
    "ChangelogVersionGoneError",
    "Placement",
    "RunBeforeFirstIntervalError",
    "changelog_rows",
    "checkpoint_log",
    "delta_figures",
    "departure",
    "departure_holds",
    "lake_table",
    "maintenance_due",
    "pause",
    "pipeline_state",
    "place_run",
    "run_changes",
    "snapshot_progress",
    "stopped_words",
    "table_columns",
    "table_version",
    "target_table_exists",
]

StorageOptions = dict[str, str] | None


def _lake(lake_root: str, pipeline_id: str = "", storage_options: StorageOptions = None) -> LakeState:
    from airflow_mysql_cdc.engine.lake.state.store import LakeState  # Delta: lazily (module doc)

    return LakeState(lake_root, pipeline_id, storage_options)


def pipeline_state(lake_root: str, pipeline_id: str, storage_options: StorageOptions) -> PipelineState | None:
    """The pipeline's applied set, epoch and members (None: it has not started in this lake)."""
    return _lake(lake_root, pipeline_id, storage_options).pipeline()


def checkpoint_log(lake_root: str, pipeline_id: str, storage_options: StorageOptions) -> CheckpointLog:
    """The chain of published records: read to place a run, appended to publish one."""
    return _lake(lake_root, pipeline_id, storage_options).checkpoint_log()


def departure(lake_root: str, ref: TableRef, storage_options: StorageOptions) -> Departure | None:
    """The mark of a table that left the pipeline at a DDL (None: it never did, or has no target)."""
    return _lake(lake_root, storage_options=storage_options).departure(ref)


def departure_holds(departed: Departure | None, progress: SnapshotProgress | None) -> bool:
    """The mark still keeps the table out: no snapshot taken after it brought the table back
    (:func:`airflow_mysql_cdc.engine.lake.departures.departure_holds`, the rule admission asks)."""
    from airflow_mysql_cdc.engine.lake.departures import departure_holds as holds  # Delta: lazily

    return holds(departed, progress.stream_start if progress is not None else None)


def stopped_words(table: str, reason: str) -> str:
    """What a user is told of a stopped table (one wording, the engine's)."""
    from airflow_mysql_cdc.engine.lake.evolution import stopped_words as words  # the lake's words: here

    return words(table, reason)


def pause(lake_root: str, ref: TableRef, storage_options: StorageOptions) -> PauseMark | None:
    """The mark of a table an operator paused (None: it is not paused, or has no target)."""
    return _lake(lake_root, storage_options=storage_options).pause(ref)


def snapshot_progress(
    lake_root: str, ref: TableRef, storage_options: StorageOptions
) -> SnapshotProgress | None:
    """The table's latest snapshot in the lake (None: never snapshotted)."""
    from airflow_mysql_cdc.engine.snapshot.lake_commits import read_snapshot_progress  # Delta, Arrow: lazily

    return read_snapshot_progress(_lake(lake_root, storage_options=storage_options), ref)


def target_table_exists(lake_root: str, ref: TableRef, storage_options: StorageOptions) -> bool:
    """Whether the lake holds the table's target table (asked of the store, never the filesystem)."""
    from airflow_mysql_cdc.engine.lake.layout import LakeLayout
    from airflow_mysql_cdc.engine.lake.storage import lake_table_exists

    return lake_table_exists(str(LakeLayout(lake_root).target(ref.schema, ref.table)), storage_options)


def table_columns(location: str, storage_options: StorageOptions) -> list[tuple[str, str]] | None:
    """A Delta table's columns and their Delta types (``long``, ``decimal(10,2)``, ``array``), as its
    log's latest version says; None when there is no table there or it cannot be read (lineage only:
    never a reason to fail a task)."""
    try:
        from deltalake import DeltaTable  # Delta: lazily (module doc)

        schema = DeltaTable(location, storage_options=storage_options).schema()
    except Exception:
        return None
    return [(column.name, str(getattr(column.type, "type", column.type))) for column in schema.fields]


def maintenance_due(
    lake_root: str, pipeline_id: str, storage_options: StorageOptions, policy: MaintenancePolicy
) -> str | None:
    """None when the lake's upkeep is due under ``policy``, else why it is not."""
    from airflow_mysql_cdc.engine.lake.maintenance.run import maintenance_due as due  # Delta, Arrow: lazily

    return due(_lake(lake_root, pipeline_id, storage_options), policy)


def delta_figures(table_uri: str, storage_options: StorageOptions) -> tuple[int, int] | None:
    """A Delta table's current version and number of data files (None: no Delta table there)."""
    from deltalake import DeltaTable  # Delta: lazily (module doc)
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(table_uri, storage_options=storage_options)
    except TableNotFoundError:
        return None
    return table.version(), len(table.file_uris())


def table_version(lake_root: str, ref: TableRef, kind: str, storage_options: StorageOptions) -> int | None:
    """The current Delta version of the table's ``target`` or ``changelog`` (None: no such table)."""
    from airflow_mysql_cdc.engine.lake.run_changes import table_version as version  # Delta: lazily

    return version(lake_table(lake_root, ref, kind), storage_options)


def run_changes(
    lake_root: str,
    ref: TableRef,
    transactions: GtidSet,
    storage_options: StorageOptions,
    *,
    written_since_ms: int | None,
) -> RunChanges:
    """The table's changes of ``transactions`` per operation, read from its changelog."""
    from airflow_mysql_cdc.engine.lake.run_changes import run_changes as changes  # Delta, Arrow: lazily

    return changes(
        lake_table(lake_root, ref, "changelog"),
        transactions,
        storage_options,
        written_since_ms=written_since_ms,
    )


class ChangelogVersionGoneError(LookupError):
    """Stands for :class:`~airflow_mysql_cdc.engine.lake.run_changes.ChangelogVersionGoneError`, which
    :func:`changelog_rows` raises as this (the engine module is imported lazily)."""


def changelog_rows(
    changelog: str,
    transactions: GtidSet,
    storage_options: StorageOptions,
    *,
    partitions: Sequence[datetime.date] | None = None,
    version: int | None = None,
) -> pa.Table | None:
    """The rows of ``transactions`` in the changelog at ``changelog`` (None: there is none)."""
    from airflow_mysql_cdc.engine.lake import run_changes  # Delta, Arrow: lazily

    try:
        return run_changes.changelog_rows(
            changelog, transactions, storage_options, partitions=partitions, version=version
        )
    except run_changes.ChangelogVersionGoneError as error:
        raise ChangelogVersionGoneError(str(error)) from error


def lake_table(lake_root: str, ref: TableRef, kind: str) -> str:
    """Where the table's ``target`` or ``changelog`` lives (the layout: configuration, not a read)."""
    from airflow_mysql_cdc.engine.lake.layout import LakeLayout

    layout = LakeLayout(lake_root)
    if kind == "target":
        return layout.target(ref.schema, ref.table)
    if kind == "changelog":
        return layout.changelog(ref.schema, ref.table)
    raise ValueError(f"a lake table is a 'target' or a 'changelog', not {kind!r}")
