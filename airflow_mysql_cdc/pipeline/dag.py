"""The pipeline DAG: prerequisites, where the run stands, resumability, the chain step, upkeep.

    check_prerequisites >> load_checkpoint >> resumability >> replicate >> maintain_lake [>> verify_lake]

One run applies one *segment*: every transaction committed before its data interval end that the
chain's latest record does not hold (and, for a run that snapshots or admits tables, at least up to
their consistent point). The chain is kept in the lake (:mod:`airflow_mysql_cdc.runs.checkpoint_chain`),
so runs do not wait for each other: a failed run's interval is covered by the next successful run,
a re-run of a published interval republishes its record, a run inside the chain applies nothing,
and a run before the first interval is refused. ``replicate`` (place, snapshot, apply, publish) has
``max_active_tis_per_dag=1``: one run at a time is there, whatever else runs (a backfill, a manual
run). ``max_active_runs=1`` keeps scheduled runs in date order. Retrying, clearing and backfilling
are safe (docs/pipeline-dag.md).

``maintain_lake`` keeps the lake's tables bounded in files (compaction sorted by key, checkpoints,
expired-log clean-up, vacuum) when the configuration's ``maintenance.interval_hours`` has passed
since the last time; it takes the pipeline's lease, so it never runs beside an application.

A *covered* run (its interval inside another run's segment: queued behind a catch-up, or cleared
after a later run published) applies nothing, and its ``replicate`` skips ``maintain_lake`` and
``verify_lake``: the lake's position did not move since the covering run's own ran there. So a
covered run costs four tasks and no Spark, maintenance or verification process.

``verify_lake`` (on by default, ``verify: sample``; none with ``verify: off``) compares each table in
the lake with the source at the run's position, under the pipeline's lease, while writes go on; it
fails on a proven difference and names the repair, and warns of a table it did not compare in full
(docs/operations.md, "Verifying the lake"). It runs after maintenance, which it never runs beside
(both take the lease), and reads the compacted files.

``dags/mysql_cdc_daily.py`` builds this DAG from the configuration file; a custom DAG can use
the same operators and :mod:`airflow_mysql_cdc.runs.checkpoint_chain` (docs/custom-dags.md).
"""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG, task
from airflow.sdk.configuration import conf

from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.hooks.lake_storage import LakeStorageHook
from airflow_mysql_cdc.operators.maintenance import MySqlCdcLakeMaintenanceOperator
from airflow_mysql_cdc.operators.prerequisites import MySqlCdcPrerequisitesOperator
from airflow_mysql_cdc.operators.replicate import MySqlCdcReplicateOperator
from airflow_mysql_cdc.operators.verify import MySqlCdcVerifyOperator
from airflow_mysql_cdc.pipeline.config import PipelineConfig
from airflow_mysql_cdc.pipeline.dag_docs import describe_pipeline
from airflow_mysql_cdc.runs import checkpoint_chain
from airflow_mysql_cdc.sensors.gtid_sensors import MySqlCdcResumabilitySensor


def build_pipeline_dag(config: PipelineConfig) -> DAG:
    """The DAG of the module doc, one task per step, built from ``config``; its ``doc_md`` (the DAG's
    docs in the UI) describes this pipeline from ``config`` (:mod:`.dag_docs`)."""
    default_args = {
        "retries": config.retries,
        "retry_delay": datetime.timedelta(seconds=config.retry_delay_s),
    }
    with DAG(
        config.dag_id,
        schedule=config.schedule_value(),
        start_date=config.start,
        catchup=config.catchup,
        max_active_runs=1,
        default_args=default_args,
        tags=list(config.tags),
        doc_md=describe_pipeline(config),
    ) as dag:
        prerequisites = _prerequisites(config)
        loaded = _load_checkpoint(config)
        resumability = _resumability(config)
        replicate = _replicate(config)
        maintain = _maintain_lake(config)
        prerequisites >> loaded >> resumability >> replicate >> maintain
        if config.verify_settings().enabled:
            maintain >> _verify_lake(config)
    return dag


def _prerequisites(config: PipelineConfig) -> MySqlCdcPrerequisitesOperator:
    return MySqlCdcPrerequisitesOperator(
        task_id="check_prerequisites",
        tables=list(config.tables),
        mysql_cdc_conn_id=config.mysql_cdc_conn_id,
        lake_root=config.lake_root,
        storage_options=config.storage_options,
        lake_conn_id=config.lake_conn_id,
    )


def _load_checkpoint(config: PipelineConfig) -> Any:
    """Where the run stands in the chain, for the resumability sensor to check (its XCom)."""

    @task(task_id="load_checkpoint", multiple_outputs=False)
    def load_checkpoint(**context: Any) -> JsonObject:
        # Credentials included: for reading the lake in this worker only, never returned.
        options = LakeStorageHook(config.lake_conn_id).get_delta_storage_options(config.storage_options)
        return checkpoint_chain.load_checkpoint(
            context,
            pipeline_id=config.pipeline_id,
            lake_root=config.lake_root,
            mysql_cdc_conn_id=config.mysql_cdc_conn_id,
            storage_options=options,
            tables=config.tables,
        )

    return load_checkpoint()


_LOADED_SEGMENT_END = "{{ ti.xcom_pull(task_ids='load_checkpoint').get('checkpoint_segment_end') or '' }}"
"""Up to when the checkpoint covers data (the chain head's segment end), from ``load_checkpoint``."""


def _resumability(config: PipelineConfig) -> MySqlCdcResumabilitySensor:
    return MySqlCdcResumabilitySensor(
        task_id="resumability",
        mysql_cdc_conn_id=config.mysql_cdc_conn_id,
        checkpoint="{{ ti.xcom_pull(task_ids='load_checkpoint')['checkpoint'] }}",
        on_purged=config.on_purged,
        empty_checkpoint_passes=True,
        **config.sensor_arguments(conf.getboolean("operators", "default_deferrable", fallback=False)),
        poke_interval=config.sensor_poke_interval_s,
        timeout=config.resumability_timeout_s,
        # The look ahead: binlog retention headroom against the schedule, and a stale position.
        schedule_interval=config.interval(),
        retention_headroom_runs=config.retention_headroom_runs,
        binlog_retention_hours=config.binlog_retention_hours,
        stale_after=config.stale_after(),
        checkpoint_segment_end=_LOADED_SEGMENT_END,
        pipeline_id=config.pipeline_id,
    )


def _replicate(config: PipelineConfig) -> MySqlCdcReplicateOperator:
    """The chain step; ``max_active_tis_per_dag=1``: one run at a time decides, writes and publishes.

    Its outlets are the lake tables' Assets (the operator's default: per table its target and its
    changelog), and each run fills their events with what it wrote (docs/assets.md).
    """
    spark = config.spark_settings()
    return MySqlCdcReplicateOperator(
        spark_conf=spark.spark_conf() or None,
        py_files=spark.py_files_argument(),
        files=",".join(spark.files) or None,
        archives=",".join(spark.archives) or None,
        execution_timeout=spark.execution_timeout(),
        task_id=checkpoint_chain.PUBLISH_TASK_ID,
        pipeline_id=config.pipeline_id,
        tables=list(config.tables),
        lake_root=config.lake_root,
        storage_options=config.storage_options,
        lake_conn_id=config.lake_conn_id,
        mysql_cdc_conn_id=config.mysql_cdc_conn_id,
        spark_conn_id=config.spark_conn_id,
        chunk_size=config.chunk_size,
        batch_max_seconds=config.batch_max_seconds,
        progress_interval_s=config.progress_interval_s,
        soft_deletes=config.soft_deletes,
        schema_changes=config.schema_changes,
        statement_changes=config.statement_changes,
        catchup_parallelism=config.catchup_parallelism,
        resumability_task_id="resumability",
        catch_up_backlog_after=config.interval() if config.catch_up_backlog else None,
        skip_downstream_when_covered=True,  # maintain_lake, verify_lake: nothing moved, nothing to do
        max_active_tis_per_dag=1,
    )


def _maintain_lake(config: PipelineConfig) -> MySqlCdcLakeMaintenanceOperator:
    return MySqlCdcLakeMaintenanceOperator(
        task_id="maintain_lake",
        pipeline_id=config.pipeline_id,
        tables=list(config.tables),
        lake_root=config.lake_root,
        storage_options=config.storage_options,
        lake_conn_id=config.lake_conn_id,
        maintenance=config.maintenance,
    )


def _verify_lake(config: PipelineConfig) -> MySqlCdcVerifyOperator:
    settings = config.verify_settings()
    return MySqlCdcVerifyOperator(
        task_id="verify_lake",
        pipeline_id=config.pipeline_id,
        tables=list(config.tables),
        lake_root=config.lake_root,
        mode=settings.mode,
        sample_chunks=settings.sample_chunks,
        chunk_size=settings.chunk_size,
        max_examples=settings.max_examples,
        mask_values=settings.mask_values,
        repair=settings.repair,
        soft_deletes=config.soft_deletes,
        storage_options=config.storage_options,
        lake_conn_id=config.lake_conn_id,
        mysql_cdc_conn_id=config.mysql_cdc_conn_id,
    )
