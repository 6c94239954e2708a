"""One maintenance run over a pipeline's lake, under the pipeline's lease, reported as it goes.

Invariant: maintenance never races the binlog application for the lake. It claims the pipeline's
lease first (a second instance is refused while an application holds it: ``PipelineBusyError``, a
retryable failure), renews it after every table, and releases it at the end; an application
starting meanwhile is refused the same way and retried. Every step leaves the rows unchanged
(:mod:`.steps`), so even a maintenance that outlived its lease only rearranges files under a
running application, which that application retries across (:mod:`..table_handles`).

The tables visited: each configured table's target (sorted by the leading column of the row key
its snapshot recorded) and changelog, then the pipeline's own tables: the state, the checkpoint
log, this maintenance log, and each configured table's snapshot log (rows of older snapshots
pruned first, :meth:`~..state.snapshot_log.SnapshotLog.prune`). A table that does not exist is
skipped. ``interval_hours`` makes a run whose predecessor finished less than that long ago do
nothing (:func:`maintenance_due`).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Iterator, Sequence

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, TableNotFoundError

from airflow_mysql_cdc.engine.lake.delta_layout import ROW_KEY_PROPERTY
from airflow_mysql_cdc.engine.lake.layout import OWN_TABLE_PROPERTIES
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
from airflow_mysql_cdc.engine.lake.maintenance.report import MaintenanceReport
from airflow_mysql_cdc.engine.lake.maintenance.steps import MaintainedTable, maintain_table
from airflow_mysql_cdc.engine.lake.outside_changes import vouched_across
from airflow_mysql_cdc.engine.lake.state.lease import Lease
from airflow_mysql_cdc.engine.lake.state.pipeline_state import default_owner
from airflow_mysql_cdc.engine.lake.state.snapshot_log import SNAPSHOT_APP_ID
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.mysql.schema import TableRef

log = logging.getLogger("airflow_mysql_cdc.maintenance")


def maintenance_due(lake: LakeState, policy: MaintenancePolicy, now_us: int | None = None) -> str | None:
    """None when a maintenance run is due; else why not (for the task log)."""
    if not policy.enabled:
        return "maintenance is off (maintenance.enabled: false)"
    if lake.pipeline() is None:
        return "the pipeline has not written this lake yet"
    last = last_maintenance_us(lake)
    now_us = now_us if now_us is not None else time.time_ns() // 1000
    if last is not None and now_us - last < policy.interval_hours * 3600e6:
        hours = (now_us - last) / 3600e6
        return (
            f"the last maintenance finished {hours:.1f} h ago "
            f"(maintenance.interval_hours: {policy.interval_hours})"
        )
    return None


def maintain_lake(
    lake: LakeState,
    tables: Sequence[str],
    policy: MaintenancePolicy,
    *,
    lease_s: float = 60.0,
    owner: str | None = None,
    force: bool = False,
) -> MaintenanceReport:
    """Maintain ``tables``' lake tables and the pipeline's own (module docstring), if due or ``force``."""
    started = time.monotonic()
    report = MaintenanceReport(lake.pipeline_id, time.time_ns() // 1000)
    report.skipped = None if force and lake.pipeline() is not None else maintenance_due(lake, policy)
    if report.skipped:
        log.info("%s", report.summary())
        return report
    store = lake.pipeline_store()
    current = store.read()
    assert current is not None
    with Lease.claim(store, owner or default_owner(), current.applied_gtids, lease_s=lease_s) as lease:
        report.pruned_snapshot_records = _prune_snapshot_logs(lake, tables)
        for spec in _tables(lake, tables):
            try:
                table = DeltaTable(spec.path, storage_options=lake.storage_options)
            except TableNotFoundError:
                continue
            # Vouch for its own (data-neutral) commits, so the next open reads only what comes after.
            key, checked = f"{spec.role}:{spec.name}", dict(lease.state.checked_versions or {})
            maintain = functools.partial(maintain_table, table, spec, policy)
            if spec.role == "own":
                table_report, vouched = maintain(), None
            else:
                table_report, vouched = vouched_across(table, spec.role, checked.get(key), maintain)
            report.tables.append(table_report)
            log.info("maintenance: %s", table_report.describe())
            if vouched is not None:
                checked[key] = vouched
            lease.commit(checked_versions=checked)  # also the lease's heartbeat, after every table
        report.seconds = round(time.monotonic() - started, 3)
        _record(lake, report)
    log.info("%s", report.summary())
    return report


def last_maintenance_us(lake: LakeState) -> int | None:
    try:
        table = DeltaTable(lake.layout.maintenance_log, storage_options=lake.storage_options)
    except TableNotFoundError:
        return None
    finished = table.to_pyarrow_table(columns=["finished_at_us"]).column("finished_at_us").to_pylist()
    return max(finished) if finished else None


def _record(lake: LakeState, report: MaintenanceReport) -> None:
    row = pa.table(
        {
            "pipeline_id": [report.pipeline_id],
            "started_at_us": [report.started_at_us],
            "finished_at_us": [time.time_ns() // 1000],
            "report": [json.dumps(report.to_dict(), sort_keys=True)],
        }
    )
    write_deltalake(
        lake.layout.maintenance_log,
        row,
        mode="append",
        storage_options=lake.storage_options,
        configuration=OWN_TABLE_PROPERTIES,
        commit_properties=CommitProperties(max_commit_retries=10),
    )


def _prune_snapshot_logs(lake: LakeState, tables: Sequence[str]) -> int:
    pruned = 0
    for ref in (TableRef.parse(name) for name in tables):
        target = lake.target(ref)
        if target is None:
            continue
        try:
            pruned += lake.snapshot_log(ref).prune(target.transaction_version(SNAPSHOT_APP_ID))
        except (CommitFailedError, TableNotFoundError) as error:  # a snapshot running meanwhile
            log.warning("maintenance: the snapshot log of %s was not pruned this time: %s", ref, error)
    return pruned


def _tables(lake: LakeState, tables: Sequence[str]) -> Iterator[MaintainedTable]:
    layout = lake.layout
    refs = [TableRef.parse(name) for name in tables]
    for ref in refs:
        key = _row_key(lake, ref)
        yield MaintainedTable(
            layout.target(ref.schema, ref.table),
            "target",
            str(ref),
            key[0] if key else None,
            tuple(key or ()),
        )
        yield MaintainedTable(layout.changelog(ref.schema, ref.table), "changelog", str(ref))
    yield MaintainedTable(layout.state, "own", "_cdc/state")
    yield MaintainedTable(layout.checkpoints, "own", "_cdc/checkpoints")
    yield MaintainedTable(layout.maintenance_log, "own", "_cdc/maintenance")
    yield MaintainedTable(layout.verify_log, "own", "_cdc/verify")
    for ref in refs:
        yield MaintainedTable(layout.snapshot_log(ref.schema, ref.table), "own", f"_cdc/snapshots/{ref}")


def _row_key(lake: LakeState, ref: TableRef) -> list[str] | None:
    """The target's row key: recorded by its snapshot, or by the sink that created it."""
    start = lake.latest_snapshot_start(ref)
    if start is not None and start.key:
        return list(start.key)
    target = lake.target(ref)
    recorded = target.metadata().configuration.get(ROW_KEY_PROPERTY) if target is not None else None
    return json.loads(recorded) if recorded else None
