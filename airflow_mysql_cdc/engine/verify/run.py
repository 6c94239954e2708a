"""One verification of a pipeline's lake against its source, under the pipeline's lease.

Invariant: the lake does not move while it is verified, and the position it is compared at is the
one it holds. The verification claims the pipeline's lease first (an application running is
refused it: ``PipelineBusyError``, a retryable failure, as for maintenance), reads the position
``E`` from the state it claimed, renews the lease as it goes and releases it at the end. So no
batch lands during the comparison, and every target the state names as streamed holds the source
at ``E`` unless something broke it: what :mod:`.table_check` proves or rules out, chunk by chunk.

A table is not compared (``inconclusive`` or ``skipped``, with the reason, never a failure, but a
warning and a coverage of 0: :mod:`.report`) when the lake cannot be expected to hold it at ``E``:
no target yet, not a member of the stream yet (it joins at a later run), its snapshot unfinished,
ahead of the state after an interrupted run, or out of the pipeline by a departure mark no later
snapshot lifted (:func:`~..lake.departures.departure_holds`: a table re-snapshotted within a run is
compared, test_pipeline_dag_statement_changes.py); or when a DDL or a statement-logged change after
``E`` may have changed it. A table without a row key cannot be in the pipeline (the snapshot refuses
it), so none reaches here. Which tables are compared, and what of each in which order, is
:mod:`.planning`.

With ``repair``, the differing keys of a table are set to their values at ``E`` (:mod:`.repair`; a
key held twice loses its copies first) and their chunks compared again; the table is ``repaired``
only if they are then equal. What still differs, and what had keys left out, is kept for the next
verification (:mod:`.pending`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import pyarrow as pa
import pymysql

from airflow_mysql_cdc.engine.binlog.stream import random_server_id
from airflow_mysql_cdc.engine.lake.state.lease import Lease
from airflow_mysql_cdc.engine.lake.state.pipeline_state import default_owner
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.snapshot.window import open_window_connection
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.verify.changed_keys import BinlogFollower
from airflow_mysql_cdc.engine.verify.comparable import RowDiff, duplicate_example, example
from airflow_mysql_cdc.engine.verify.lake_rows import LakeRows
from airflow_mysql_cdc.engine.verify.pending import still_pending
from airflow_mysql_cdc.engine.verify.planning import PlannedTable, plan_table
from airflow_mysql_cdc.engine.verify.repair import remove_live_rows, repair_target
from airflow_mysql_cdc.engine.verify.report import TableReport, VerifyReport
from airflow_mysql_cdc.engine.verify.rotation import SampleCursor
from airflow_mysql_cdc.engine.verify.settings import VerifySettings
from airflow_mysql_cdc.engine.verify.source_chunks import gtid_executed
from airflow_mysql_cdc.engine.verify.table_check import ChunkFinding, SchemaChangedAfterPosition, TableCheck
from airflow_mysql_cdc.engine.verify.verify_log import VerifyLog, VerifyRecord

log = logging.getLogger("airflow_mysql_cdc.verify")


def verify_lake(
    lake: LakeState,
    endpoint: MySqlEndpoint,
    tables: Sequence[str],
    settings: VerifySettings,
    *,
    soft_deletes: bool = False,
    lease_s: float = 60.0,
    owner: str | None = None,
) -> VerifyReport:
    """Verify ``tables`` (module docstring); the report says per table what was found and done."""
    started = time.monotonic()
    report = VerifyReport(lake.pipeline_id, settings.mode)
    store = lake.pipeline_store()
    current = store.read()
    if not settings.enabled or current is None:
        report.skipped = (
            "verify is off" if not settings.enabled else "the pipeline has not written this lake yet"
        )
        return report
    with Lease.claim(store, owner or default_owner(), current.applied_gtids, lease_s=lease_s) as lease:
        position = lease.state.applied_gtids
        report.position = str(position)
        verify_log = VerifyLog(lake.layout.verify_log, lake.pipeline_id, lake.storage_options)
        previous = verify_log.records()
        records: dict[str, VerifyRecord] = {}
        with open_window_connection(endpoint) as connection, endpoint.connect() as planning:
            planned = []
            for name in tables:
                outcome = plan_table(
                    lake, lease.state, planning, TableRef.parse(name), settings, previous.get(name)
                )
                if isinstance(outcome, TableReport):
                    log.warning("verify: %s", outcome.describe())
                    report.tables.append(outcome)
                else:
                    planned.append(outcome)
            follower = BinlogFollower(endpoint, position, _key_types(planned), server_id=random_server_id())
            _settle_schema_differences(report.tables, follower, connection)
            for table in planned:
                _verify_table(table, connection, follower, position, settings, lease, soft_deletes, lake)
                report.tables.append(table.report)
                fully = table.report.compared and not table.report.low_coverage
                log.log(logging.INFO if fully else logging.WARNING, "verify: %s", table.report.describe())
                if not settings.key_range:  # a re-load of a key range leaves the sample's rotation alone
                    records[str(table.ref)] = _record(table, settings, position)
        if records:
            verify_log.write(records)
    report.seconds = round(time.monotonic() - started, 3)
    log.info("%s", report.summary())
    return report


def _key_types(planned: Sequence[PlannedTable]) -> dict[str, tuple[ColumnType, ...]]:
    return {
        str(table.ref): tuple(
            column for name in table.metadata.key_columns for column in table.columns if column.name == name
        )
        for table in planned
    }


def _settle_schema_differences(
    reports: Sequence[TableReport], follower: BinlogFollower, connection: pymysql.connections.Connection
) -> None:
    """A table whose lake columns differ is inconclusive if a DDL after the position may explain it."""
    differing = [report for report in reports if report.status == "mismatch"]
    if not differing:
        return
    now = gtid_executed(connection)
    follower.advance_to(now)
    for report in differing:
        ddl = follower.changed.schema_changes(report.table, now)
        if ddl:
            report.status, report.reason = "inconclusive", SchemaChangedAfterPosition(ddl).reason


def _verify_table(
    table: PlannedTable,
    connection: pymysql.connections.Connection,
    follower: BinlogFollower,
    position: GtidSet,
    settings: VerifySettings,
    lease: Lease,
    soft_deletes: bool,
    lake: LakeState,
) -> None:
    check = TableCheck(
        connection, table.metadata, table.columns, table.lake_rows, follower, position,
        settle_s=settings.settle_s, heartbeat=lease.heartbeat_if_due,
    )  # fmt: skip
    report = table.report
    chunks = table.again + table.chunks
    total = len(chunks)

    def progress(done: int) -> None:
        log.info("verify of %s: %d/%d chunks done", table.ref, done, total)

    report.table_rows = table.lake_rows.live_rows
    try:
        findings = check.compare(chunks, progress)
    except SchemaChangedAfterPosition as change:
        report.status, report.reason = "inconclusive", change.reason
        return
    for finding in findings:
        finding.report.again = table.why_again.get(finding.chunk.index, "")
    report.rechecked = table.rechecking
    _tally(report, findings, table, settings)
    if settings.mode == "sample":
        report.cursor = table.cursor.advanced(table.chunks).to_json()
    still = {finding.chunk.index for finding in findings if finding.diff}
    if report.differences and settings.repair:
        still = _repair_and_recheck(table, check, findings, soft_deletes, position, lake)
    elif report.differences:
        report.status = "mismatch"
    table.pending = still_pending(
        ((finding.chunk, finding.chunk.index in still, finding.report.excluded) for finding in findings),
        str(position),
    )
    report.pending = len(table.pending)


def _repair_and_recheck(
    table: PlannedTable,
    check: TableCheck,
    findings: Sequence[ChunkFinding],
    soft_deletes: bool,
    position: GtidSet,
    lake: LakeState,
) -> set[int]:
    """Repair the differing keys, compare their chunks again; the indexes of chunks still differing."""
    report = table.report
    report.status = "mismatch"
    diffs = [finding.diff for finding in findings if finding.diff]
    repaired = _repair(table, diffs, soft_deletes, position, lake)
    check.lake_rows = table.lake_rows  # the target as the repair left it
    again = [finding.chunk for finding in findings if finding.diff]
    try:
        recheck = check.compare(again)
    except SchemaChangedAfterPosition as change:
        repaired["outcome"] = "not verified again: " + change.reason
        report.repair = repaired
        return {chunk.index for chunk in again}
    still = {finding.chunk.index for finding in recheck if finding.diff}
    outcome = "equal to the source" if not still else f"{len(still)} chunk(s) still differ"
    if table.held_twice_left:
        outcome += (
            f"; {table.held_twice_left} more key(s) held twice were not compared by this verification "
            "(one chunk each, up to a limit per run): the next one repairs them"
        )
    repaired["outcome"] = outcome
    report.repair = repaired
    if not still and not table.held_twice_left:
        report.status = "repaired"
    return still


def _tally(
    report: TableReport, findings: Sequence[ChunkFinding], table: PlannedTable, settings: VerifySettings
) -> None:
    key = table.metadata.key_columns
    held = {row_key for row_key, _ in table.held_twice}
    report.duplicated = len(table.held_twice)
    for row_key, rows in table.held_twice[: settings.max_examples]:
        report.examples.append(duplicate_example(row_key, rows, key, mask_values=settings.mask_values))
    for finding in findings:
        report.chunks.append(finding.report)
        report.chunks_checked += 1
        report.rows_compared += finding.rows_compared
        report.from_binlog += finding.from_binlog
        report.excluded += finding.report.excluded
        diff = finding.diff
        if not diff:
            continue
        only_held_twice = [k for k, columns in diff.differing.items() if k in held and columns == ("*",)]
        report.missing += len(diff.missing)
        report.extra += len(diff.extra)
        report.differing += len(diff.differing) - len(only_held_twice)
        for kind, keys in (
            ("missing", diff.missing),
            ("extra", diff.extra),
            ("differing", [k for k in diff.differing if k not in only_held_twice]),
        ):
            for row_key in keys:
                if len(report.examples) < settings.max_examples:
                    report.examples.append(
                        example(kind, row_key, key, diff, mask_values=settings.mask_values)
                    )


def _repair(
    table: PlannedTable, diffs: Sequence[RowDiff], soft_deletes: bool, position: GtidSet, lake: LakeState
) -> dict[str, object]:
    schema = table.lake_rows.schema
    upserted = [diff.source_rows[row_key] for diff in diffs for row_key in [*diff.missing, *diff.differing]]
    deleted = [row_key for diff in diffs for row_key in diff.extra]
    target = lake.target(table.ref)
    assert target is not None
    held = {row_key for row_key, _ in table.held_twice}
    copies = [row_key for diff in diffs for row_key in diff.differing if row_key in held]
    if copies:  # a MERGE updates every copy of a key: take the copies out, the upsert puts one back
        removed = remove_live_rows(
            target, f"target of {table.ref}", copies, table.metadata.key_columns, schema,
            position=position,
        )  # fmt: skip
        log.warning(
            "verify: removed the %d live row(s) of %d key(s) %s holds twice (target version %d)",
            removed.deleted, len(copies), table.ref, removed.version,
        )  # fmt: skip
    done = repair_target(
        target, f"target of {table.ref}", pa.Table.from_pylist(upserted, schema=schema), deleted,
        table.metadata.key_columns, soft_deletes=soft_deletes, position=position,
        repaired_at_us=time.time_ns() // 1000,
    )  # fmt: skip
    log.warning(
        "verify: repaired %s at %s: %d row(s) upserted, %d deleted (target version %d)",
        table.ref, position, done.upserted, done.deleted, done.version,
    )  # fmt: skip
    table.lake_rows = LakeRows(
        target,
        table.columns,
        table.metadata.key_columns,
        table.metadata.row_key_columns,
        table.lake_rows.order,
    )
    return {"upserted": done.upserted, "deleted": done.deleted, "version": done.version}


def _record(table: PlannedTable, settings: VerifySettings, position: GtidSet) -> VerifyRecord:
    report = table.report
    cursor = SampleCursor.from_json(report.cursor) if report.cursor else table.cursor
    if settings.mode == "full" and report.status in ("clean", "repaired", "mismatch"):
        cursor = SampleCursor(None, table.cursor.passes + 1)
    summary = {
        key: getattr(report, key)
        for key in (
            "chunks_checked", "rows_compared", "excluded", "from_binlog", "table_rows", "missing", "extra",
            "differing", "duplicated",
        )
    }  # fmt: skip
    summary["coverage"] = report.coverage
    compared = report.status not in ("inconclusive", "skipped")
    return VerifyRecord(
        table=report.table, cursor=cursor, position=str(position), verified_at_us=time.time_ns() // 1000,
        mode=settings.mode, status=report.status, summary=summary,
        pending=table.pending if compared else table.previous_pending,
    )  # fmt: skip
