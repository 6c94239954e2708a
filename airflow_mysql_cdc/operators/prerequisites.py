"""Operator: check a server's CDC prerequisites before any data moves."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.mysql.prerequisites.checks import PrerequisiteConfig
from airflow_mysql_cdc.engine.mysql.prerequisites.facts import MIN_RETENTION_FLOOR_S
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.hooks.connection_errors import SOURCE_CONNECTION_ERRORS
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.operators.lake_target import LakeTarget
from airflow_mysql_cdc.operators.links import MySqlCdcLakeLocationLink
from airflow_mysql_cdc.runs import lake

REPORT_XCOM_KEY = "prerequisites_report"


def parse_table_list(tables: str | Sequence[str]) -> tuple[TableRef, ...]:
    """Tables as a list or a comma/whitespace-separated string (what a templated param renders to)."""
    items = tables.replace(",", " ").split() if isinstance(tables, str) else list(tables)
    return tuple(TableRef.parse(item) for item in items)


def default_min_retention_s(context: Any) -> int:
    """Twice the run's data interval, so a failed run can be retried a whole interval later; never < 24 h."""
    start, end = context.get("data_interval_start"), context.get("data_interval_end")
    interval_s = (end - start).total_seconds() if start is not None and end is not None else 0
    return int(max(2 * interval_s, MIN_RETENTION_FLOOR_S))


class MySqlCdcPrerequisitesOperator(LakeTarget, BaseOperator):
    """Runs every CDC prerequisite check against the source server and fails (without retries) on errors.

    The task log shows one table of results, failures first with the SQL or configuration that
    fixes each. The full report (a dict) is pushed to XCom under ``prerequisites_report`` and is
    also the return value, whatever the outcome. Warnings never fail the task.

    :param tables: ``schema.table`` names, as a list or a comma-separated string (templated).
    :param mysql_cdc_conn_id: a ``mysql_cdc`` or ``mysql`` connection (templated).
    :param min_binlog_retention: the binlog retention to require; defaults to twice the DAG run's
        data interval, and never less than 24 hours.
    :param reader_server_ids: the replication server_ids the pipeline's readers will use; defaults
        to the connection's ``server_id`` extra.
    :param lake_root: the pipeline's lake (templated; with ``storage_options`` and ``lake_conn_id``):
        a configured table missing from the server that the lake holds is a warning, not an error
        (dropped or renamed after it joined; the binlog application takes it out at that DDL).
    """

    template_fields: Sequence[str] = (
        "mysql_cdc_conn_id", "tables", "reader_server_ids", "lake_root", "lake_conn_id",
    )  # fmt: skip
    ui_color = "#e8f4ea"
    operator_extra_links = (MySqlCdcLakeLocationLink(),)

    def __init__(
        self,
        *,
        tables: str | Sequence[str],
        mysql_cdc_conn_id: str = MySqlCdcHook.default_conn_name,
        min_binlog_retention: timedelta | None = None,
        reader_server_ids: Sequence[int] | None = None,
        lake_root: str | None = None,
        storage_options: dict[str, str] | None = None,
        lake_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.take_lake_arguments(lake_root or "", storage_options, lake_conn_id)  # "": no lake to check
        self.tables = tables
        self.mysql_cdc_conn_id = mysql_cdc_conn_id
        self.min_binlog_retention = min_binlog_retention
        self.reader_server_ids = reader_server_ids

    def _in_the_lake(self, tables: tuple[TableRef, ...]) -> frozenset[TableRef]:
        """Configured tables that have a target table in the lake (none when no lake is given)."""
        if not self.lake_root:
            return frozenset()
        options = self.delta_storage_options()
        return frozenset(ref for ref in tables if lake.target_table_exists(self.lake_root, ref, options))

    def execute(self, context: Any) -> dict[str, Any]:
        hook = MySqlCdcHook(self.mysql_cdc_conn_id)
        endpoint = hook.get_endpoint()
        reader_ids = self.reader_server_ids
        if reader_ids is None:
            reader_ids = [endpoint.replication_server_id] if endpoint.replication_server_id else []
        retention_s = (
            int(self.min_binlog_retention.total_seconds())
            if self.min_binlog_retention is not None
            else default_min_retention_s(context)
        )
        tables = parse_table_list(self.tables)
        config = PrerequisiteConfig(
            tables=tables,
            in_the_lake=self._in_the_lake(tables),
            min_binlog_retention_s=retention_s,
            reader_server_ids=tuple(int(i) for i in reader_ids),
        )
        self.log.info("Checking CDC prerequisites of %s for %d table(s)", endpoint, len(config.tables))
        try:
            report = hook.check_prerequisites(config)
        except SOURCE_CONNECTION_ERRORS as error:  # its message says it all: not the hook's frames
            raise error.with_traceback(None) from None
        self.log.info("CDC prerequisites:\n%s", report.render_table())
        context["ti"].xcom_push(key=REPORT_XCOM_KEY, value=report.to_dict())
        if not report.ok:
            failed = ", ".join(result.name for result in report.errors)
            # AirflowFailException: a misconfigured server does not fix itself, so retrying is pointless.
            raise AirflowFailException(
                f"{len(report.errors)} CDC prerequisite(s) failed on {endpoint}: {failed}. "
                "The task log lists each with its fix."
            )
        return report.to_dict()
