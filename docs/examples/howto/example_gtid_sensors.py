"""How-to example (docs/how-to/gtid-sensors.md): wait for a replica, then judge resumability.

``MySqlGtidReachedSensor`` waits until the replica the pipeline reads has executed what the primary
had at the run's start (pushed by the first task); ``MySqlCdcResumabilitySensor`` then checks that
the checkpoint can be resumed there (``gtid_purged ⊆ checkpoint ⊆ gtid_executed``). Both defer to
the triggerer, freeing the worker slot while they wait.
"""

from __future__ import annotations

import datetime
import os
from typing import Any

from airflow.sdk import DAG, task

from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.sensors.gtid_sensors import MySqlCdcResumabilitySensor, MySqlGtidReachedSensor

PRIMARY = os.environ.get("SHOP_CDC_PRIMARY_CONN", "shop_primary")
REPLICA = os.environ.get("SHOP_CDC_CONN", "shop_mysql")

with DAG(
    "mysql_cdc_howto_gtid_sensors",
    schedule=None,
    start_date=datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
    params={"checkpoint": ""},
) as dag:

    @task(task_id="primary_position")
    def primary_position(**context: Any) -> str:
        return str(MySqlCdcHook(PRIMARY).get_gtid_executed())

    replica_caught_up = MySqlGtidReachedSensor(
        task_id="replica_caught_up",
        mysql_cdc_conn_id=REPLICA,
        target=primary_position(),
        deferrable=True,
        poke_interval=10,
        timeout=1800,
    )
    resumability = MySqlCdcResumabilitySensor(
        task_id="resumability",
        mysql_cdc_conn_id=REPLICA,
        checkpoint="{{ params.checkpoint }}",
        on_purged="fail",
        schedule_interval=datetime.timedelta(hours=1),
        deferrable=True,
        timeout=1800,
    )
    replica_caught_up >> resumability
