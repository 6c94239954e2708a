"""What maintenance does to one Delta table, each step one atomic Delta commit or an idempotent delete.

Invariant: no step changes a table's rows. Compaction and sorting commit rearrangements
(``dataChange=false``) that a concurrent binlog application retries across (:mod:`..table_handles`);
a checkpoint, the clean-up of expired log files and vacuum remove only what no current version
needs. Nothing the pipeline reads lives in commit history (:mod:`..state`), so the clean-up is safe
for it. So a kill -9 between or inside steps leaves the table whole, and the next maintenance
redoes what is still to do (``test_a_killed_maintenance_leaves_the_lake_exact_and_its_retry_finishes``).

The steps, per kind of table:

- **target**: ``delta.targetFileSize`` set to the policy's size, or less where that many bytes
  would hold more than ``max_file_rows`` rows of this table (a MERGE costs the rows of the files it
  touches), so any writer's compaction keeps files that small; once ``small_files`` files are below
  half of it, or its files' key ranges overlap more than 4 deep, the table is rewritten sorted by its
  leading key column (``z_order`` on one column is a sort), so files hold disjoint key ranges and a
  MERGE of a batch touches only the files of its keys;
- **changelog**: the same size; each closed day (``_cdc_commit_date`` before today, UTC) with more
  than one small file is compacted, and today's once it has ``small_files`` of them (a live pipeline
  adds a file per batch: a second a day is 86,400 files; the sink's appends are blind, so they never
  conflict with the compaction, and it accepts the rearrangement);
- **the pipeline's own tables** (``_cdc/...``): their short retention properties
  (:data:`..layout.OWN_TABLE_PROPERTIES`), compaction once ``small_files`` files have gathered;
- **every table**: a checkpoint, the clean-up of log files past ``delta.logRetentionDuration``, and
  vacuum (targets and changelogs keep unreferenced files ``vacuum_retention_hours``, or the
  table's own ``delta.deletedFileRetentionDuration`` if longer; own tables an hour). The vacuum is
  *full*: it lists the table's folder and also deletes files no commit ever referenced (a snapshot
  task killed after writing its file, :mod:`...data_files`), once they are older than the retention,
  so a file still waiting for its commit is never touched.
"""

from __future__ import annotations

import datetime
import math
import re
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.lake.delta_layout import (
    COMMIT_DATE_COLUMN,
    COMMIT_TS_COLUMN,
    TARGET_FILE_SIZE_PROPERTY,
)
from airflow_mysql_cdc.engine.lake.file_statistics import files_with_stale_statistics, sync_statistics_columns
from airflow_mysql_cdc.engine.lake.layout import OWN_TABLE_PROPERTIES
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
from airflow_mysql_cdc.engine.lake.maintenance.report import TableReport

_OWN_RETENTION_HOURS = 1
_STALE_BYTES_PER_RUN = 8 * 1024**3
"""Changelog bytes one maintenance run rewrites at most to make old files' statistics exact."""
_MAX_OVERLAP = 4
"""A target whose files' key ranges overlap deeper than this is sorted again."""
_DURATION = re.compile(r"^\s*interval\s+(\d+)\s+(second|minute|hour|day|week)s?\s*$", re.IGNORECASE)
_HOURS_PER_UNIT = {"second": 1 / 3600, "minute": 1 / 60, "hour": 1.0, "day": 24.0, "week": 168.0}


@dataclass(frozen=True)
class MaintainedTable:
    """A table maintenance visits: its URI, what it is, and (targets) the column to sort by."""

    path: str
    role: str
    """``target``, ``changelog`` or ``own``."""
    name: str
    """``schema.table`` for targets and changelogs; the table's place under ``_cdc`` otherwise."""
    sort_column: str | None = None
    row_key: tuple[str, ...] = ()
    """A target's row key (its columns keep statistics wherever they are, :mod:`...file_statistics`)."""


def maintain_table(table: DeltaTable, spec: MaintainedTable, policy: MaintenancePolicy) -> TableReport:
    """Run every step for ``spec`` on ``table`` (module docstring); returns what was done."""
    started = time.monotonic()
    report = TableReport(spec.path, spec.role, spec.name)
    files = _files(table)
    report.files_before, report.bytes_before = files.num_rows, _bytes(files)
    if spec.role != "own" and files.num_rows:
        policy = policy.sized_for(int(pc.sum(files.column("num_records")).as_py() or 0), report.bytes_before)
    _set_properties(table, spec, policy, report)
    if spec.role != "own" and _rewrite_stale_statistics(table, spec, policy, report):
        files = _files(table)
    if spec.role == "target":
        _sort_target(table, spec, policy, files, report)
    elif spec.role == "changelog":
        _compact_days(table, policy, files, report)
    elif _small(files, policy).num_rows >= policy.small_files:
        table.optimize.compact(target_size=policy.target_file_bytes)
        report.actions.append("compacted")
    table.create_checkpoint()
    table.cleanup_metadata()
    report.actions.append("checkpointed, expired log files cleaned up")
    vacuumed = table.vacuum(
        retention_hours=_vacuum_hours(table, spec, policy),
        enforce_retention_duration=False,
        dry_run=False,
        full=True,
    )
    report.vacuumed_files = len(vacuumed)
    if vacuumed:
        report.actions.append(f"vacuumed {len(vacuumed)} file(s)")
    table.update_incremental()
    files = _files(table)
    report.files_after, report.bytes_after = files.num_rows, _bytes(files)
    report.seconds = round(time.monotonic() - started, 3)
    return report


def _set_properties(
    table: DeltaTable, spec: MaintainedTable, policy: MaintenancePolicy, report: TableReport
) -> None:
    if spec.role == "own":
        wanted = dict(OWN_TABLE_PROPERTIES)
    else:
        wanted = {TARGET_FILE_SIZE_PROPERTY: str(policy.target_file_bytes)}
    current = table.metadata().configuration
    missing = {key: value for key, value in wanted.items() if current.get(key) != value}
    if missing:
        table.alter.set_table_properties(missing, raise_if_not_exists=False)
        report.actions.append("set " + ", ".join(f"{key}={value}" for key, value in sorted(missing.items())))
    if spec.role != "own" and sync_statistics_columns(table, spec.row_key):
        report.actions.append("statistics kept only where exact")


def _rewrite_stale_statistics(
    table: DeltaTable, spec: MaintainedTable, policy: MaintenancePolicy, report: TableReport
) -> bool:
    """Rewrite the files written before the table's statistics became exact (:mod:`...file_statistics`):
    DuckDB's Delta reader still trusts their old statistics, and skipped files holding rows it looked
    for. A target is rewritten whole, sorted; a changelog day by day, up to :data:`_STALE_BYTES_PER_RUN`
    a run (the next run goes on). True when anything was rewritten."""
    stale = files_with_stale_statistics(table)
    if not stale.num_rows:
        return False
    if spec.role == "target":
        column = spec.sort_column or table.schema().to_arrow().field(0).name
        sorted_rewrite(table, column, policy.target_file_bytes)
        report.actions.append(f"rewritten {stale.num_rows} file(s) whose statistics were inexact")
        return True
    column = f"partition.{COMMIT_DATE_COLUMN}"
    days: list[str] = []
    budget = _STALE_BYTES_PER_RUN
    for day, size in sorted(
        zip(stale.column(column).to_pylist(), stale.column("size_bytes").to_pylist(), strict=True)
    ):
        if budget <= 0:
            break
        if _as_date(day).isoformat() not in days:
            days.append(_as_date(day).isoformat())
        budget -= size
    table.optimize.z_order(
        [COMMIT_TS_COLUMN],
        partition_filters=[(COMMIT_DATE_COLUMN, "in", days)],
        target_size=policy.target_file_bytes,
    )
    left = files_with_stale_statistics(table).num_rows
    report.actions.append(
        f"rewritten {len(days)} day(s) whose files' statistics were inexact"
        + (f"; {left} file(s) left for the next run" if left else "")
    )
    return True


def _sort_target(
    table: DeltaTable, spec: MaintainedTable, policy: MaintenancePolicy, files: pa.Table, report: TableReport
) -> None:
    """Rewrite the target sorted by its leading key when small files gathered or key ranges overlap.

    Only a sorted rewrite gives files disjoint key ranges back: delta-rs's MERGE writes rewritten rows
    in no key order and ``compact()`` joins files next to each other in the log, whatever their keys
    (measured: after one MERGE of keys spread over the table, file ranges overlapped 3 to 14 deep and a
    MERGE of recent keys cost 4.3 s instead of 0.2 s). So a plain compaction is not used on targets.
    """
    depth = _overlap_depth(files, spec.sort_column)
    if _small(files, policy).num_rows < policy.small_files and depth <= _MAX_OVERLAP:
        return
    if spec.sort_column is None:
        table.optimize.compact(target_size=policy.target_file_bytes)
        report.actions.append("compacted (no key known to sort by)")
        return
    sorted_rewrite(table, spec.sort_column, policy.target_file_bytes)
    report.actions.append(f"rewritten sorted by {spec.sort_column} (key ranges overlapped {depth} deep)")


def sorted_rewrite(table: DeltaTable, column: str, target_file_bytes: int) -> None:
    """Rewrite every file of ``table`` sorted by ``column`` (``z_order`` on one column is a sort), in
    files of about ``target_file_bytes``: a rearrangement, the rows unchanged. The write-path test lays
    a target out with it (tests/integration/test_write_path_differential.py)."""
    table.optimize.z_order([column], target_size=target_file_bytes)


def _overlap_depth(files: pa.Table, column: str | None) -> int:
    """How many files' ``column`` ranges cover one key at most (1: disjoint files; 0: unknown)."""
    low, high = f"min.{column}", f"max.{column}"
    if column is None or low not in files.column_names or high not in files.column_names:
        return 0
    events = []
    for start, end in zip(files.column(low).to_pylist(), files.column(high).to_pylist(), strict=True):
        if start is None or end is None:
            return 0
        events += [(start, 0), (end, 1)]
    depth = deepest = 0
    for _, closing in sorted(events):
        depth += -1 if closing else 1
        deepest = max(deepest, depth)
    return deepest


def _compact_days(table: DeltaTable, policy: MaintenancePolicy, files: pa.Table, report: TableReport) -> None:
    column = f"partition.{COMMIT_DATE_COLUMN}"
    if column not in files.column_names or not files.num_rows:
        return
    today = datetime.datetime.now(datetime.UTC).date()
    small = _small(files, policy)
    per_day: dict[datetime.date, int] = {}
    for day in small.column(column).to_pylist():
        if day is not None:
            per_day[_as_date(day)] = per_day.get(_as_date(day), 0) + 1
    days = sorted(
        day for day, count in per_day.items() if count >= (2 if day < today else policy.small_files)
    )
    if not days:
        return
    table.optimize.compact(
        partition_filters=[(COMMIT_DATE_COLUMN, "in", [day.isoformat() for day in days])],
        target_size=policy.target_file_bytes,
    )
    closed = sum(day < today for day in days)
    report.actions.append(
        f"compacted {closed} closed day(s)" + (", and today's" if closed < len(days) else "")
    )


def _vacuum_hours(table: DeltaTable, spec: MaintainedTable, policy: MaintenancePolicy) -> int:
    if spec.role == "own":
        return _OWN_RETENTION_HOURS
    declared = _hours(table.metadata().configuration.get("delta.deletedFileRetentionDuration"))
    return math.ceil(max(policy.vacuum_retention_hours, declared or 0.0))


def _hours(duration: str | None) -> float | None:
    match = _DURATION.match(duration or "")
    return int(match.group(1)) * _HOURS_PER_UNIT[match.group(2).lower()] if match else None


def _files(table: DeltaTable) -> pa.Table:
    return pa.table(table.get_add_actions(flatten=True))


def _small(files: pa.Table, policy: MaintenancePolicy) -> pa.Table:
    if not files.num_rows:
        return files
    return files.filter(pc.less(files.column("size_bytes"), policy.target_file_bytes // 2))


def _bytes(files: pa.Table) -> int:
    return int(pc.sum(files.column("size_bytes")).as_py() or 0) if files.num_rows else 0


def _as_date(value: Any) -> datetime.date:
    return value if isinstance(value, datetime.date) else datetime.date.fromisoformat(str(value))
