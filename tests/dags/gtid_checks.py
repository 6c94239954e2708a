"""Test DAG: prerequisites, then the resumability and GTID-reached sensors, all configured by run_conf."""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from airflow_mysql_cdc.operators.prerequisites import MySqlCdcPrerequisitesOperator
from airflow_mysql_cdc.sensors.gtid_sensors import MySqlCdcResumabilitySensor, MySqlGtidReachedSensor

with DAG(
    "test_gtid_checks",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1),
    params={
        "conn_id": "cdc_source",
        "tables": "",
        "checkpoint": "",
        "target": "",
        "on_purged": "fail",
        "timeout_s": 5,
    },
) as dag:
    prerequisites = MySqlCdcPrerequisitesOperator(
        task_id="prerequisites",
        mysql_cdc_conn_id="{{ params.conn_id }}",
        tables="{{ params.tables }}",
        # Retries that only a retryable failure uses (a wrong password must fail at once).
        retries=2,
        retry_delay=datetime.timedelta(0),
    )
    resumable = MySqlCdcResumabilitySensor(
        task_id="resumable",
        mysql_cdc_conn_id="{{ params.conn_id }}",
        checkpoint="{{ params.checkpoint }}",
        on_purged="fail",
        poke_interval=1,
        timeout=5,
    )
    resumable_deferred = MySqlCdcResumabilitySensor(
        task_id="resumable_deferred",
        mysql_cdc_conn_id="{{ params.conn_id }}",
        checkpoint="{{ params.checkpoint }}",
        on_purged="resnapshot",
        deferrable=True,
        poke_interval=1,
        timeout=5,
    )
    reached = MySqlGtidReachedSensor(
        task_id="reached",
        mysql_cdc_conn_id="{{ params.conn_id }}",
        target="{{ params.target }}",
        mode="reschedule",
        poke_interval=1,
        timeout=5,
    )
    prerequisites >> [resumable, resumable_deferred, reached]
