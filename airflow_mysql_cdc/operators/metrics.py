"""The operators' figures, read from their applications' result files, as metrics (:mod:`..hooks.metrics`).

Invariant: every metric is emitted on the Airflow side, once, after the application's result is
known (the result file the operator reads back): the engine, which runs inside Spark on machines
without Airflow, emits nothing, and a retried or cleared run that applies nothing emits counters of
zero, so each series goes on. The catalogue of names, types and tags, and the one function that
emits, live in :mod:`airflow_mysql_cdc.hooks.metrics`, where the sensors reach them too.

Guarded by tests/unit/airflow/operators/test_metrics.py (emission with the backend replaced) and
tests/integration/test_binlog_apply_operator.py (a StatsD listener on loopback receives them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from airflow_mysql_cdc.engine.apply.config import ApplyResult
from airflow_mysql_cdc.engine.lake.maintenance.report import MaintenanceReport
from airflow_mysql_cdc.engine.snapshot.result import SnapshotResult
from airflow_mysql_cdc.engine.verify.report import VerifyReport
from airflow_mysql_cdc.hooks.metrics import emit


def emit_apply(result: ApplyResult, tables: Sequence[str]) -> None:
    """The binlog application's figures (:class:`ApplyResult`), per pipeline and per table of
    ``tables`` (the application's): a table without changes counts 0, so its series goes on."""
    pipeline = result.pipeline_id
    stops = Counter(evolution.table for evolution in result.stopped)
    emit("mysql_cdc.apply.transactions", result.transactions, pipeline=pipeline)
    for table in sorted({*tables, *result.rows_by_table, *result.stopped_tables}):
        transactions = result.transactions_by_table.get(table, 0)
        emit("mysql_cdc.apply.table_transactions", transactions, pipeline=pipeline, table=table)
        emit("mysql_cdc.apply.rows", result.rows_by_table.get(table, 0), pipeline=pipeline, table=table)
        emit(
            "mysql_cdc.apply.table_stopped",
            int(table in result.stopped_tables),
            pipeline=pipeline,
            table=table,
        )
        emit("mysql_cdc.apply.table_stops", stops.get(table, 0), pipeline=pipeline, table=table)
    if result.lag_s is not None and result.transactions:
        emit("mysql_cdc.apply.lag_seconds", result.lag_s, pipeline=pipeline)
    emit("mysql_cdc.apply.duration", result.duration_s * 1000.0, pipeline=pipeline)
    emit("mysql_cdc.binlog.bytes_read", result.binlog_bytes_read, pipeline=pipeline)


def emit_snapshot(result: SnapshotResult) -> None:
    """The snapshot application's figures (:class:`SnapshotResult`), per table."""
    for table in result.tables:
        name = table.table
        emit("mysql_cdc.snapshot.rows", table.rows, table=name)
        if table.rows_per_second is not None:
            emit("mysql_cdc.snapshot.rows_per_second", table.rows_per_second, table=name)
        emit("mysql_cdc.snapshot.chunks_run", table.chunks_run, table=name)
        emit("mysql_cdc.snapshot.chunks_total", table.chunks_total, table=name)


def emit_maintenance(report: MaintenanceReport) -> None:
    """A maintenance run's figures, per lake table; nothing for a skipped run."""
    if report.skipped:
        return
    pipeline = report.pipeline_id
    for table in report.tables:
        tags = {"pipeline": pipeline, "table": table.name, "role": table.role}
        emit("mysql_cdc.maintenance.files_before", table.files_before, **tags)
        emit("mysql_cdc.maintenance.files_after", table.files_after, **tags)
        emit("mysql_cdc.maintenance.bytes_after", table.bytes_after, **tags)
        emit("mysql_cdc.maintenance.vacuumed_files", table.vacuumed_files, **tags)
    emit("mysql_cdc.maintenance.duration", report.seconds * 1000.0, pipeline=pipeline)


def emit_verify(report: VerifyReport) -> None:
    """A verification's figures, per table; nothing for a skipped one."""
    if report.skipped:
        return
    pipeline = report.pipeline_id
    for table in report.tables:
        name = table.table
        emit("mysql_cdc.verify.rows_compared", table.rows_compared, pipeline=pipeline, table=name)
        emit("mysql_cdc.verify.mismatched_rows", table.differences, pipeline=pipeline, table=name)
        emit("mysql_cdc.verify.coverage", table.coverage, pipeline=pipeline, table=name)
        emit("mysql_cdc.verify.left_out_rows", table.excluded, pipeline=pipeline, table=name)
