"""A small custom DAG: hourly binlog segments of two tables, checkpoint chain, no snapshots.

The tables' rows already in MySQL are not copied (no snapshot): the first run starts from
``first_start`` (a DAG param, e.g. ``@@gtid_executed`` taken when the tables were created), every
later run from the previous successful run's checkpoint.
"""

from __future__ import annotations

import datetime
import os
from typing import Any

from airflow.sdk import DAG, task

from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from airflow_mysql_cdc.operators.prerequisites import MySqlCdcPrerequisitesOperator
from airflow_mysql_cdc.runs import checkpoint_chain
from airflow_mysql_cdc.sensors.gtid_sensors import MySqlCdcResumabilitySensor

CONN = os.environ.get("SHOP_CDC_CONN", "shop_mysql")
TABLES = os.environ.get("SHOP_CDC_TABLES", "shop.orders,shop.payments").split(",")
LAKE = os.environ.get("SHOP_CDC_LAKE", "/data/lake/shop")
PIPELINE = "shop_hourly"

with DAG(
    os.environ.get("SHOP_CDC_DAG_ID", "shop_hourly"),
    schedule="@hourly",
    start_date=datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
    catchup=True,
    max_active_runs=1,  # scheduled runs in date order; the chain itself needs no depends_on_past
    params={"first_start": ""},
) as dag:
    check = MySqlCdcPrerequisitesOperator(task_id="check", tables=TABLES, mysql_cdc_conn_id=CONN)

    @task(task_id="load")
    def load(**context: Any) -> str:
        loaded = checkpoint_chain.load_checkpoint(
            context, pipeline_id=PIPELINE, lake_root=LAKE, mysql_cdc_conn_id=CONN, publish_task_id="publish"
        )
        if loaded["record"]:  # a re-run, or an interval a later run covered: nothing to apply
            return loaded["record"]["end_gtids"]
        return loaded["checkpoint"] or context["params"]["first_start"]

    start = load()
    resumable = MySqlCdcResumabilitySensor(
        task_id="resumable", mysql_cdc_conn_id=CONN, checkpoint=start, mode="reschedule", timeout=3600
    )
    apply = MySqlCdcBinlogApplyOperator(
        task_id="apply",
        mysql_cdc_conn_id=CONN,
        spark_conn_id=os.environ.get("SHOP_CDC_SPARK_CONN", "spark_default"),
        tables=TABLES,
        lake_root=LAKE,
        pipeline_id=PIPELINE,
        start_gtids=start,
        mode="segment",  # every transaction committed before data_interval_end
    )

    @task(task_id="publish")
    def publish(applied: dict[str, Any], **context: Any) -> dict[str, Any]:
        return checkpoint_chain.publish_checkpoint(
            context, pipeline_id=PIPELINE, lake_root=LAKE, mysql_cdc_conn_id=CONN, tables=TABLES,
            applied=applied,
        )  # fmt: skip

    check >> start
    resumable >> apply
    publish(apply.output)
