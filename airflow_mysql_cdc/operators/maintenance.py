"""Operator: maintain a pipeline's lake (compact, sort, checkpoint, clean expired logs, vacuum).

The work runs in a process of its own (``engine/entrypoints/maintain_lake.py``, no Spark, no MySQL),
in its own process group: its output becomes task log lines, a killed or timed-out task kills it
whole, and a kill -9 at any point leaves the lake exact (every step is atomic or idempotent; the
retry redoes what is left). It takes the pipeline's lease, so it never runs beside the binlog
application: while an application holds the lease it fails retryably (exit 3) and Airflow retries.

Whether it is due (``maintenance.interval_hours`` since the last one, the lake's
``_cdc/maintenance`` log) is decided here first, so most runs finish at once without starting a
process. The result (XCom) says per table what was done: files and bytes before and after, seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_mysql_cdc.engine.lake.maintenance.config import MaintenanceConfig
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
from airflow_mysql_cdc.engine.lake.maintenance.report import MaintenanceReport
from airflow_mysql_cdc.engine.lake.storage import secret_storage_options_to_environment
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.operators import metrics
from airflow_mysql_cdc.operators.engine_process import EngineProcessOperator
from airflow_mysql_cdc.operators.lake_target import LakeTarget
from airflow_mysql_cdc.operators.lineage import OpenLineageMixin, TaskLineage, lake_tables
from airflow_mysql_cdc.operators.links import MySqlCdcLakeLocationLink
from airflow_mysql_cdc.operators.table_lists import rendered_table_names, table_names_argument
from airflow_mysql_cdc.runs import lake

APPLICATION_MODULE = "airflow_mysql_cdc.engine.entrypoints.maintain_lake"


class MySqlCdcLakeMaintenanceOperator(LakeTarget, OpenLineageMixin, EngineProcessOperator):
    """Maintains the lake of pipeline ``pipeline_id`` when due; returns what it did (the XCom).

    :param pipeline_id: the pipeline whose lease the maintenance takes (templated).
    :param tables: ``schema.table`` names whose target and changelog tables are maintained.
    :param lake_root: a local path or a URI (templated).
    :param storage_options: public delta-rs storage options; a credential here is refused.
    :param lake_conn_id: an ``aws`` connection with the lake's credentials.
    :param maintenance: the pipeline JSON's ``maintenance`` object (docs/operations.md,
        "Lake maintenance"); validated when the DAG is parsed.
    :param force: maintain even when the last maintenance is younger than ``interval_hours``.
    :param lease_s: how long a silent maintenance keeps the pipeline's lease.
    """

    template_fields: Sequence[str] = ("pipeline_id", "tables", "lake_root", "lake_conn_id")
    ui_color = "#e6f2e6"
    operator_extra_links = (MySqlCdcLakeLocationLink(),)

    def __init__(
        self,
        *,
        pipeline_id: str,
        tables: Sequence[str],
        lake_root: str,
        storage_options: dict[str, str] | None = None,
        lake_conn_id: str | None = None,
        maintenance: Mapping[str, Any] | None = None,
        force: bool = False,
        lease_s: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pipeline_id = pipeline_id
        self.tables = table_names_argument(tables)
        self.take_lake_arguments(lake_root, storage_options, lake_conn_id)
        self.policy = MaintenancePolicy.from_dict(dict(maintenance or {}))
        self.force = force
        self.lease_s = lease_s

    def execute(self, context: Any) -> JsonObject:
        self.tables = rendered_table_names(self.tables)
        lake_hook = self.lake_hook()
        public, secret = lake_hook.get_storage_options(self.storage_options)
        options = {**public, **secret} or None
        why_not = None
        if not self.force:
            why_not = lake.maintenance_due(self.lake_root, self.pipeline_id, options, self.policy)
        if why_not is not None:
            self.log.info("Summary: maintenance skipped: %s", why_not)
            return MaintenanceReport(self.pipeline_id, 0, skipped=why_not).to_dict()
        config = MaintenanceConfig(
            pipeline_id=self.pipeline_id,
            lake_root=self.lake_root,
            tables=tuple(self.tables),
            policy=self.policy,
            storage_options=public,
            lease_s=self.lease_s,
            force=True,
        )
        result = self._run(config, secret_storage_options_to_environment(secret))
        report = MaintenanceReport.from_dict(result)
        metrics.emit_maintenance(report)
        locations = [table.location for table in lake_tables(self.lake_root, self.tables)]
        lake_hook.report_tables_read(locations)
        lake_hook.report_tables_written(locations)
        self.lineage = self.planned_lineage().done(None)
        self.log.info("Summary: %s", report.summary())
        return result

    def planned_lineage(self) -> TaskLineage:
        """The target and changelog tables, read and rewritten (compaction, sorting, vacuum)."""
        return TaskLineage(
            lake_root=self.lake_root,
            lake_inputs=self.tables,
            lake_outputs=self.tables,
            storage_options=self.delta_storage_options(),
        )

    def _run(self, config: MaintenanceConfig, secret_environment: dict[str, str]) -> JsonObject:
        return self.run_engine_process(APPLICATION_MODULE, config.to_dict(), secret_environment)
