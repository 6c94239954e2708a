"""How-to example (docs/how-to/replicate.md): the whole pipeline run in one task, on a schedule.

The same composition :func:`airflow_mysql_cdc.pipeline.dag.build_pipeline_dag` builds from a JSON
file (dags/mysql_cdc_daily.py), written out: the resumability sensor judges the chain's last end
set, the replicate task places the run in the chain, snapshots what needs it, applies the interval
and publishes the run's record (its "Run record" link opens it).
"""

from __future__ import annotations

import datetime
import os
from typing import Any

from airflow.sdk import DAG, task

from airflow_mysql_cdc.operators.replicate import MySqlCdcReplicateOperator
from airflow_mysql_cdc.runs import checkpoint_chain
from airflow_mysql_cdc.sensors.gtid_sensors import MySqlCdcResumabilitySensor

CONN = os.environ.get("SHOP_CDC_CONN", "shop_mysql")
LAKE = os.environ.get("SHOP_CDC_LAKE", "/data/lake/shop")
PIPELINE = "shop"

with DAG(
    "mysql_cdc_howto_replicate",
    schedule=datetime.timedelta(hours=1),
    start_date=datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
    catchup=False,
) as dag:

    @task(task_id="load_checkpoint")
    def load_checkpoint(**context: Any) -> str:
        loaded = checkpoint_chain.load_checkpoint(
            context, pipeline_id=PIPELINE, lake_root=LAKE, mysql_cdc_conn_id=CONN, publish_task_id="replicate"
        )
        return loaded["checkpoint"]

    resumability = MySqlCdcResumabilitySensor(
        task_id="resumability",
        mysql_cdc_conn_id=CONN,
        checkpoint=load_checkpoint(),
        empty_checkpoint_passes=True,  # the first run snapshots: nothing to resume yet
        on_purged="resnapshot",  # purged binlogs: the replicate task snapshots every table again
        schedule_interval=datetime.timedelta(hours=1),
        mode="reschedule",
        timeout=3600,
    )
    replicate = MySqlCdcReplicateOperator(
        task_id="replicate",
        pipeline_id=PIPELINE,
        mysql_cdc_conn_id=CONN,
        spark_conn_id=os.environ.get("SHOP_CDC_SPARK_CONN", "spark_default"),
        tables=["shop.orders", "shop.payments"],
        lake_root=LAKE,
        resumability_task_id="resumability",
        catch_up_backlog_after=datetime.timedelta(hours=1),
        max_active_tis_per_dag=1,  # one run at a time decides and publishes
    )
    resumability >> replicate
