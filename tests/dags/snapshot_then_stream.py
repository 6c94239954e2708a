"""Test DAG: snapshot tables on Spark, then stream from the snapshot's watermark to caught up."""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from airflow_mysql_cdc.operators.snapshot import MySqlCdcSnapshotOperator

with DAG(
    "test_snapshot_then_stream",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1),
    params={"conn_id": "cdc_source", "tables": "", "lake_root": ""},
) as dag:
    snapshot = MySqlCdcSnapshotOperator(
        task_id="snapshot",
        mysql_cdc_conn_id="{{ params.conn_id }}",
        spark_conn_id="spark_local",
        tables="{{ params.tables }}",
        lake_root="{{ params.lake_root }}",
        chunk_size=60,
    )
    stream = MySqlCdcBinlogApplyOperator(
        task_id="stream",
        mysql_cdc_conn_id="{{ params.conn_id }}",
        spark_conn_id="spark_local",
        tables="{{ params.tables }}",
        lake_root="{{ params.lake_root }}",
        pipeline_id="snapshot-test",
        start_gtids="{{ ti.xcom_pull(task_ids='snapshot')['stream_start'] }}",
        mode="until_caught_up",
        batch_max_seconds=0.3,
    )
    snapshot >> stream
