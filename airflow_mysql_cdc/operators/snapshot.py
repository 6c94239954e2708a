"""Operator: snapshot tables into the lake with lock-free chunk windows, in parallel on Spark."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow_mysql_cdc.engine.runtime.progress import PROGRESS_INTERVAL_S, check_progress_interval
from airflow_mysql_cdc.engine.snapshot.config import SnapshotConfig
from airflow_mysql_cdc.engine.snapshot.result import SnapshotResult
from airflow_mysql_cdc.hooks.lake_storage import LakeStorageHook
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.operators import metrics
from airflow_mysql_cdc.operators.lake_target import LakeTarget
from airflow_mysql_cdc.operators.lineage import OpenLineageMixin, TaskLineage, lake_tables
from airflow_mysql_cdc.operators.prerequisites import parse_table_list
from airflow_mysql_cdc.operators.spark_application import ApplicationSecrets, SparkApplicationOperator

APPLICATION = str(Path(__file__).resolve().parents[1] / "engine" / "entrypoints" / "snapshot_to_delta.py")
"""The snapshot application's entry point, found without importing it (it imports Spark and Delta)."""


class MySqlCdcSnapshotOperator(LakeTarget, OpenLineageMixin, SparkApplicationOperator):
    """Snapshots ``tables`` into the lake; resumes an unfinished snapshot at its next chunk.

    The application plans key-range chunks, reads each in a window bracketed by GTID watermarks
    (one Spark task per chunk, each with its own connections and replication server_id), and
    commits chunks to the Delta target tables as they finish; the task log shows chunks done,
    rows, rows/s and ETA. The XCom return value holds per-table results and ``stream_start``,
    the GTID set the binlog application must start from.

    :param tables: ``schema.table`` names (templated).
    :param lake_root: where the Delta tables live: a local path or a URI such as ``s3://bucket/prefix``
        (templated).
    :param storage_options: public delta-rs storage options of the lake (endpoint, region); a
        credential here is refused.
    :param lake_conn_id: an ``aws`` connection with the lake's credentials; they reach the application
        in its environment only. Unset: the Spark driver's own environment or instance role.
    :param chunk_size: rows per chunk.
    :param restart: take a new snapshot even if one finished (a re-snapshot replaces the table's
        contents); without it a finished snapshot is kept and an unfinished one resumed (templated:
        "true"/"false" are understood).
    :param base_server_id: replication server_ids ``base + chunk index`` are used by windows that
        reconcile; defaults to the connection's ``server_id`` extra plus 1000.
    :param progress_interval_s: seconds between two progress lines of a table's snapshot in the log.
    """

    template_fields: Sequence[str] = (
        "tables", "lake_root", "lake_conn_id", "restart", "mysql_cdc_conn_id", "spark_conn_id",
    )  # fmt: skip
    ui_color = "#e8eefc"

    def __init__(
        self,
        *,
        tables: str | Sequence[str],
        lake_root: str,
        storage_options: dict[str, str] | None = None,
        lake_conn_id: str | None = None,
        chunk_size: int = 50_000,
        restart: bool | str = False,
        base_server_id: int | None = None,
        mysql_cdc_conn_id: str = MySqlCdcHook.default_conn_name,
        progress_interval_s: float = PROGRESS_INTERVAL_S,
        **kwargs: Any,
    ) -> None:
        check_progress_interval(progress_interval_s, ValueError)
        super().__init__(**kwargs)
        self.tables = tables
        self.take_lake_arguments(lake_root, storage_options, lake_conn_id)
        self.chunk_size = chunk_size
        self.restart = restart
        self.base_server_id = base_server_id
        self.mysql_cdc_conn_id = mysql_cdc_conn_id
        self.progress_interval_s = progress_interval_s

    def execute(self, context: Any) -> dict[str, Any]:
        result = run_snapshot(
            self,
            tables=tuple(str(ref) for ref in parse_table_list(self.tables)) if self.tables else (),
            lake_root=self.lake_root,
            storage_options=self.storage_options,
            lake_conn_id=self.lake_conn_id,
            chunk_size=self.chunk_size,
            restart=str(self.restart).strip().lower() in ("true", "1", "yes"),
            base_server_id=self.base_server_id,
            mysql_cdc_conn_id=self.mysql_cdc_conn_id,
            progress_interval_s=self.progress_interval_s,
        )
        planned = self.planned_lineage()
        if planned is not None:
            self.lineage = planned.done({table.table: table.rows for table in result.tables})
        return result.to_dict()

    def planned_lineage(self) -> TaskLineage | None:
        """The MySQL tables read, their target tables written (a snapshot writes no changelog)."""
        tables = tuple(str(ref) for ref in parse_table_list(self.tables)) if self.tables else ()
        if not tables:
            return None
        return self.source_to_lake_lineage(tables, changelog=False)


def snapshot_application_name(lake_root: str) -> str:
    """The snapshot application's name (Spark's, and its work root's): one per lake, so the recovery
    of a killed attempt meets only snapshots of its own lake (one lake holds one pipeline), never
    stops another pipeline's orphaned snapshot (:mod:`.attempt_recovery`)."""
    return f"mysql-cdc-snapshot-{hashlib.sha256(lake_root.encode()).hexdigest()[:10]}"


def run_snapshot(
    runner: SparkApplicationOperator,
    *,
    tables: tuple[str, ...],
    lake_root: str,
    storage_options: dict[str, str],
    lake_conn_id: str | None,
    chunk_size: int,
    restart: bool,
    base_server_id: int | None,
    mysql_cdc_conn_id: str,
    progress_interval_s: float = PROGRESS_INTERVAL_S,
) -> SnapshotResult:
    """Run the snapshot application for ``tables`` under ``runner`` (the operator whose task this is)
    and read its typed result (:mod:`~airflow_mysql_cdc.engine.snapshot.result`)."""
    if not tables:
        runner.log.info("No table needs a snapshot in this run")
        return SnapshotResult()
    mysql_hook, lake_hook = MySqlCdcHook(mysql_cdc_conn_id), LakeStorageHook(lake_conn_id)
    endpoint = mysql_hook.get_endpoint()
    base_id = base_server_id
    if base_id is None and endpoint.replication_server_id:
        base_id = endpoint.replication_server_id + 1000
    public_options, secret_options = lake_hook.get_storage_options(storage_options)
    config = SnapshotConfig(
        lake_root=lake_root,
        storage_options=public_options,
        tables=tables,
        chunk_size=chunk_size,
        restart=restart,
        base_server_id=base_id,
        progress_interval_s=progress_interval_s,
    )
    runner.log.info("Snapshotting %s from %s into %s", ", ".join(config.tables), endpoint, config.lake_root)
    result = SnapshotResult.from_dict(
        runner.run_application(
            APPLICATION,
            name=snapshot_application_name(lake_root),
            config_json=config.to_json(),
            secrets=ApplicationSecrets.of(endpoint, secret_options),
        )
    )
    _log_result(runner.log, result)
    metrics.emit_snapshot(result)
    mysql_hook.report_tables_read(endpoint, config.tables)
    lake_hook.report_tables_written(
        table.location for table in lake_tables(lake_root, config.tables, changelog=False)
    )
    return result


def _log_result(log: Any, result: SnapshotResult) -> None:
    """Per table what its snapshot took, and where the stream after it starts and may end."""
    for table in result.tables:
        log.info(
            "%s: %d rows in %d chunk(s) (%d run now%s); stream from %s; exact from %s on",
            table.table, table.rows, table.chunks_total, table.chunks_run,
            ", resumed" if table.resumed else "", table.stream_start or "(empty)",
            table.consistent_point or "(empty)",
        )  # fmt: skip
    log.info(
        "The binlog application streams from %s and does not end before %s (the snapshot's "
        "consistent point), even if the run's interval ends earlier",
        result.stream_start or "(empty)",
        result.consistent_point or "(empty)",
    )
