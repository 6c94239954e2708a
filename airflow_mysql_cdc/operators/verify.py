"""Operator: verify a pipeline's lake against its MySQL source at the pipeline's position.

The work runs in a process of its own (``engine/entrypoints/verify_lake.py``, no Spark), under the
pipeline's lease, so it never runs beside the binlog application: while one holds the lease it
fails retryably (exit 3) and Airflow retries. It reads the source in key chunks without locks
while writes go on, leaves out every key a transaction after the position changed, and compares
the rest with the lake (docs/operations.md, "Verifying the lake").

The result (XCom) says per table: rows compared, left out, missing, extra, differing, examples,
each chunk's checksums, and what a repair wrote. A proven difference fails the task
(``AirflowFailException``: a retry would find it again) with a message naming, per table, what
differs and the repair; an inconclusive table (a DDL after the position, a table not streamed yet)
does not fail it, but it and a table compared under 90% of its rows are warnings ("NOT FULLY
CHECKED"), named in the Summary line, and the ``mysql_cdc.verify.coverage`` metric says how much of
each table was compared (docs/metrics.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.engine.verify.config import VerifyConfig
from airflow_mysql_cdc.engine.verify.report import (
    TableReport,
    VerifyReport,
    failure_message,
    percent,
    unchecked,
    unchecked_note,
)
from airflow_mysql_cdc.engine.verify.settings import VerifySettings, verify_mode
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.operators import metrics
from airflow_mysql_cdc.operators.engine_process import EngineProcessOperator
from airflow_mysql_cdc.operators.lake_target import LakeTarget
from airflow_mysql_cdc.operators.lineage import OpenLineageMixin, TaskLineage, lake_tables
from airflow_mysql_cdc.operators.links import MySqlCdcLakeLocationLink
from airflow_mysql_cdc.operators.spark_application import ApplicationSecrets
from airflow_mysql_cdc.operators.table_lists import rendered_table_names, table_names_argument

APPLICATION_MODULE = "airflow_mysql_cdc.engine.entrypoints.verify_lake"


class MySqlCdcVerifyOperator(LakeTarget, OpenLineageMixin, EngineProcessOperator):
    """Verifies the lake of pipeline ``pipeline_id``; returns what it found (the XCom).

    :param pipeline_id: the pipeline whose lease and position the verification takes (templated).
    :param tables: ``schema.table`` names to verify.
    :param lake_root: a local path or a URI (templated).
    :param mode: ``sample`` (``sample_chunks`` chunks per table, the next run going on where this
        one stopped) or ``full`` (every chunk); ``off`` does nothing.
    :param sample_chunks: chunks per table and run in ``sample`` mode.
    :param chunk_size: rows per chunk.
    :param max_examples: differing keys named per table.
    :param mask_values: name differing keys by a hash and columns by name, never their values.
    :param repair: set exactly the differing keys to their values at the position, then verify them again.
    :param soft_deletes: the pipeline's ``soft_deletes``: a repaired extra row is flagged, not deleted.
    :param storage_options: public delta-rs storage options; a credential here is refused.
    :param lake_conn_id: an ``aws`` connection with the lake's credentials.
    :param lease_s: how long a silent verification keeps the pipeline's lease.
    """

    template_fields: Sequence[str] = (
        "pipeline_id",
        "tables",
        "lake_root",
        "lake_conn_id",
        "mysql_cdc_conn_id",
    )
    ui_color = "#efe6f7"
    operator_extra_links = (MySqlCdcLakeLocationLink(),)

    def __init__(
        self,
        *,
        pipeline_id: str,
        tables: Sequence[str],
        lake_root: str,
        mode: str = "sample",
        sample_chunks: int = 4,
        chunk_size: int = 50_000,
        max_examples: int = 10,
        mask_values: bool = False,
        repair: bool = False,
        soft_deletes: bool = False,
        storage_options: dict[str, str] | None = None,
        lake_conn_id: str | None = None,
        mysql_cdc_conn_id: str = MySqlCdcHook.default_conn_name,
        lease_s: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pipeline_id = pipeline_id
        self.tables = table_names_argument(tables)
        self.take_lake_arguments(lake_root, storage_options, lake_conn_id)
        # Refused when the DAG is parsed, naming the key, before anything runs.
        self.settings = VerifySettings(
            mode=verify_mode(mode),
            sample_chunks=sample_chunks,
            chunk_size=chunk_size,
            max_examples=max_examples,
            mask_values=mask_values,
            repair=repair,
        )
        self.soft_deletes = soft_deletes
        self.mysql_cdc_conn_id = mysql_cdc_conn_id
        self.lease_s = lease_s

    def execute(self, context: Any) -> JsonObject:
        self.tables = rendered_table_names(self.tables)
        if not self.settings.enabled:
            self.log.info("Summary: verify skipped: verify is off")
            return VerifyReport(self.pipeline_id, self.settings.mode, skipped="verify is off").to_dict()
        mysql_hook, lake_hook = MySqlCdcHook(self.mysql_cdc_conn_id), self.lake_hook()
        endpoint = mysql_hook.get_endpoint()
        public, secret = lake_hook.get_storage_options(self.storage_options)
        config = VerifyConfig(
            pipeline_id=self.pipeline_id,
            lake_root=self.lake_root,
            tables=tuple(self.tables),
            settings=self.settings,
            soft_deletes=self.soft_deletes,
            storage_options=public,
            lease_s=self.lease_s,
        )
        secrets = ApplicationSecrets.of(endpoint, secret)
        self.log.info(
            "Verifying %s (%s) of pipeline %s against %s", ", ".join(self.tables), self.settings.mode,
            self.pipeline_id, endpoint,
        )  # fmt: skip
        result = self.run_engine_process(APPLICATION_MODULE, config.to_dict(), secrets.environment)
        report = VerifyReport.from_dict(result)
        metrics.emit_verify(report)
        mysql_hook.report_tables_read(endpoint, self.tables)
        lake_hook.report_tables_read(table.location for table in lake_tables(self.lake_root, self.tables))
        planned = self.planned_lineage()
        self.lineage = planned.done(None) if planned is not None else None
        self._log_result(report)
        if report.mismatched:
            raise AirflowFailException(verify_failure(report, self.task_id))
        return result

    def planned_lineage(self) -> TaskLineage | None:
        """The MySQL tables and their lake tables, read; with ``repair``, the target tables written."""
        if not self.settings.enabled:
            return None
        endpoint = MySqlCdcHook(self.mysql_cdc_conn_id).get_endpoint()
        return TaskLineage(
            lake_root=self.lake_root,
            source=(endpoint.host, endpoint.port),
            mysql_tables=self.tables,
            lake_inputs=self.tables,
            lake_outputs=self.tables if self.settings.repair else (),
            changelog=False,
            storage_options=self.delta_storage_options(),
        )

    def _log_result(self, report: VerifyReport) -> None:
        for table in report.tables:
            if table.repair:
                self.log.warning("%s: repaired: %s", table.table, table.repair)
        for line in unchecked(report.tables):
            self.log.warning("NOT FULLY CHECKED: %s", line)
        if report.skipped:
            self.log.info("Summary: verify skipped: %s", report.skipped)
            return
        self.log.info(
            "Summary: verify (%s) at %s: %s; %d rows compared, %d left out (changed after the position, "
            "row there unknown) in %.1fs%s",
            report.mode, report.position or "(empty)", ", ".join(map(_table_summary, report.tables)),
            sum(table.rows_compared for table in report.tables),
            sum(table.excluded for table in report.tables), report.seconds, unchecked_note(report.tables),
        )  # fmt: skip


def _table_summary(table: TableReport) -> str:
    """``db.t clean (1200 of 1200 rows compared, 100%)``: a table's status and coverage."""
    if not table.compared:
        return f"{table.table} {table.status} (not compared, 0%)"
    meant = table.rows_compared + table.excluded
    compared = f"{table.rows_compared} of {meant} rows compared, {percent(table.coverage)}"
    return f"{table.table} {table.status} ({compared})"


def verify_failure(report: VerifyReport, task_id: str) -> str:
    """The task's failure: the engine's findings by their meaning, then how to act on them in Airflow."""
    engine_lines = failure_message(report)
    columns = [table.table for table in report.mismatched if table.reason]
    how = (
        'In Airflow: to repair, set "verify_repair": true in the pipeline JSON (repair=True on this '
        "operator) and clear this task; to re-snapshot, trigger the pipeline DAG with the conf "
        f'{{"resnapshot": {json.dumps(columns or [table.table for table in report.mismatched])}}}.'
    )
    return "\n".join([f"{task_id}: {engine_lines[0]}", *engine_lines[1:], how])
