"""The pipeline DAG: prerequisites, checkpoint, resumability, snapshot, binlog segment, checkpoint.

One run applies one *segment*: every transaction committed before its data interval end that the
previous successful run did not apply. Runs go strictly in date order (``max_active_runs=1``,
``depends_on_past=True``, ``catchup`` as configured), which is what the checkpoint chain needs:
catch-up after a pause and backfills run one interval after the other, and a failed run holds
later runs back until it is retried successfully. Retrying or clearing a run is safe: its segment
end is deterministic and the lake never applies a transaction twice (docs/operations.md).

``dags/mysql_cdc_daily.py`` builds this DAG from the configuration file; a custom DAG can use
the same operators and :mod:`airflow_mysql_cdc.checkpoint_chain` (docs/custom-dags.md).
"""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG, task

from airflow_mysql_cdc import checkpoint_chain
from airflow_mysql_cdc.hooks.lake_storage import LakeStorageHook
from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from airflow_mysql_cdc.operators.prerequisites import MySqlCdcPrerequisitesOperator
from airflow_mysql_cdc.operators.snapshot import MySqlCdcSnapshotOperator
from airflow_mysql_cdc.pipeline_config import PipelineConfig
from airflow_mysql_cdc.sensors.gtid_sensors import MySqlCdcResumabilitySensor

_PLAN = "ti.xcom_pull(task_ids='plan_segment')"
_SNAPSHOT = "ti.xcom_pull(task_ids='snapshot')"


def build_pipeline_dag(config: PipelineConfig) -> DAG:
    default_args = {
        "retries": config.retries,
        "retry_delay": datetime.timedelta(seconds=config.retry_delay_s),
        "depends_on_past": True,
    }
    with DAG(
        config.dag_id,
        schedule=config.schedule_value(),
        start_date=config.start,
        catchup=config.catchup,
        max_active_runs=1,
        default_args=default_args,
        tags=list(config.tags),
        doc_md=__doc__,
    ) as dag:
        tables = list(config.tables)

        def lake_storage_options() -> dict[str, str] | None:
            """Credentials included: for reading the lake in this worker only, never returned."""
            return LakeStorageHook(config.lake_conn_id).get_delta_storage_options(config.storage_options)

        prerequisites = MySqlCdcPrerequisitesOperator(
            task_id="check_prerequisites", tables=tables, mysql_cdc_conn_id=config.mysql_cdc_conn_id
        )

        @task(task_id="load_checkpoint")
        def load_checkpoint(**context: Any) -> dict[str, Any]:
            return checkpoint_chain.load_checkpoint(
                context,
                pipeline_id=config.pipeline_id,
                lake_root=config.lake_root,
                mysql_cdc_conn_id=config.mysql_cdc_conn_id,
                storage_options=lake_storage_options(),
            )

        loaded = load_checkpoint()
        resumability = MySqlCdcResumabilitySensor(
            task_id="resumability",
            mysql_cdc_conn_id=config.mysql_cdc_conn_id,
            checkpoint="{{ ti.xcom_pull(task_ids='load_checkpoint')['checkpoint'] }}",
            on_purged=config.on_purged,  # type: ignore[arg-type]
            empty_checkpoint_passes=True,
            mode=config.sensor_mode,
            poke_interval=config.sensor_poke_interval_s,
            timeout=config.resumability_timeout_s,
        )

        @task(task_id="plan_segment")
        def plan_segment(loaded: dict[str, Any], resumable: dict[str, Any] | None) -> dict[str, Any]:
            return checkpoint_chain.plan_segment(
                loaded, resumable, tables, config.lake_root, lake_storage_options()
            )

        plan = plan_segment(loaded, resumability.output)
        snapshot = MySqlCdcSnapshotOperator(
            task_id="snapshot",
            mysql_cdc_conn_id=config.mysql_cdc_conn_id,
            spark_conn_id=config.spark_conn_id,
            tables="{{ " + _PLAN + "['tables'] | join(',') }}",
            restart="{{ " + _PLAN + "['restart'] }}",
            lake_root=config.lake_root,
            storage_options=config.storage_options,
            lake_conn_id=config.lake_conn_id,
            chunk_size=config.chunk_size,
        )
        apply_segment = MySqlCdcBinlogApplyOperator(
            task_id="apply_segment",
            mysql_cdc_conn_id=config.mysql_cdc_conn_id,
            spark_conn_id=config.spark_conn_id,
            tables=tables,
            lake_root=config.lake_root,
            storage_options=config.storage_options,
            lake_conn_id=config.lake_conn_id,
            pipeline_id=config.pipeline_id,
            start_gtids="{{ " + _PLAN + "['start_gtids'] or " + _SNAPSHOT + "['stream_start'] }}",
            rebase="{{ " + _PLAN + "['rebase'] }}",
            mode="segment",
            batch_max_seconds=config.batch_max_seconds,
            soft_deletes=config.soft_deletes,
            catchup_parallelism=config.catchup_parallelism,
        )

        @task(task_id=checkpoint_chain.PUBLISH_TASK_ID)
        def publish_checkpoint(applied: dict[str, Any], **context: Any) -> dict[str, Any]:
            return checkpoint_chain.publish_checkpoint(
                context,
                pipeline_id=config.pipeline_id,
                lake_root=config.lake_root,
                mysql_cdc_conn_id=config.mysql_cdc_conn_id,
                tables=tables,
                applied=applied,
                storage_options=lake_storage_options(),
            )

        prerequisites >> loaded
        loaded >> resumability
        plan >> snapshot >> apply_segment
        publish_checkpoint(apply_segment.output)
    return dag
