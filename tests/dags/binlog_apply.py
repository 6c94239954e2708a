"""Test DAG: the binlog application operator under spark-submit, configured by run_conf."""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator

with DAG(
    "test_binlog_apply",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1),
    params={"conn_id": "cdc_source", "tables": "", "lake_root": "", "start": "", "segment_end": ""},
) as dag:
    MySqlCdcBinlogApplyOperator(
        task_id="apply",
        mysql_cdc_conn_id="{{ params.conn_id }}",
        spark_conn_id="spark_local",
        tables="{{ params.tables }}",
        lake_root="{{ params.lake_root }}",
        pipeline_id="test",
        start_gtids="{{ params.start }}",
        mode="segment",
        segment_end="{{ params.segment_end }}",
        batch_max_seconds=0.5,
    )

with DAG(
    "test_binlog_apply_timeout",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1),
    params={"conn_id": "cdc_source", "tables": "", "lake_root": "", "start": ""},
) as timeout_dag:
    MySqlCdcBinlogApplyOperator(
        task_id="apply_live",
        mysql_cdc_conn_id="{{ params.conn_id }}",
        spark_conn_id="spark_local",
        tables="{{ params.tables }}",
        lake_root="{{ params.lake_root }}",
        pipeline_id="timeout",
        start_gtids="{{ params.start }}",
        mode="live",
        execution_timeout=datetime.timedelta(seconds=12),
        retries=0,
    )

with DAG(
    "test_binlog_apply_parallel",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1),
    params={"conn_id": "cdc_source", "tables": "", "lake_root": "", "start": ""},
) as parallel_dag:
    MySqlCdcBinlogApplyOperator(
        task_id="apply",
        mysql_cdc_conn_id="{{ params.conn_id }}",
        spark_conn_id="spark_local",
        tables="{{ params.tables }}",
        lake_root="{{ params.lake_root }}",
        pipeline_id="parallel",
        start_gtids="{{ params.start }}",
        mode="until_caught_up",
        catchup_parallelism=2,
    )
