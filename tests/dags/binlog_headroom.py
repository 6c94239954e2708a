"""Test DAG: the resumability sensor's look ahead (binlog headroom, stale position) for one checkpoint,
judged against three schedules; the connection, checkpoint and segment end come from run_conf."""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from airflow_mysql_cdc.sensors.gtid_sensors import MySqlCdcResumabilitySensor

with DAG(
    "test_binlog_headroom",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1),
    params={"conn_id": "cdc_source", "checkpoint": "", "segment_end": ""},
) as dag:
    for task_id, interval_s in (("every_minute", 60), ("every_400s", 400), ("every_1000s", 1000)):
        MySqlCdcResumabilitySensor(
            task_id=task_id,
            mysql_cdc_conn_id="{{ params.conn_id }}",
            checkpoint="{{ params.checkpoint }}",
            checkpoint_segment_end="{{ params.segment_end }}",
            schedule_interval=datetime.timedelta(seconds=interval_s),
            retention_headroom_runs=3,
            stale_after=datetime.timedelta(minutes=10),
            pipeline_id="shop",
            poke_interval=1,
            timeout=5,
        )
