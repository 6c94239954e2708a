"""The custom DAG shown in docs/custom-dags.md runs as documented: hourly segments, chained."""

from __future__ import annotations

import datetime
import uuid
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.support.airflow import connection_env, run_dag, task_states, xcom_value
from tests.support.frozen_replica import FrozenReplica
from tests.support.lake import ConcurrentWriter
from tests.support.mysql import execute, scalar
from tests.support.pipeline import SPARK_LOCAL, assert_exact_at, finish, now, writing

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db")]


def test_the_custom_dag_example_chains_its_segments_from_a_given_start(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    database = mysql_database.database
    for table in ("orders", "payments"):
        execute(mysql_database, ConcurrentWriter.DDL.replace("orders", table))
    first_start = scalar(mysql_database, "SELECT @@gtid_executed")
    dag_id = f"shop_hourly_{uuid.uuid4().hex[:8]}"  # Airflow's test database outlives one test run
    monkeypatch.setenv("SHOP_CDC_DAG_ID", dag_id)
    monkeypatch.setenv("SHOP_CDC_CONN", "cdc_source")
    monkeypatch.setenv("SHOP_CDC_TABLES", f"{database}.orders,{database}.payments")
    monkeypatch.setenv("SHOP_CDC_LAKE", str(tmp_path))
    monkeypatch.setenv("SHOP_CDC_SPARK_CONN", "spark_local")
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", connection_env(mysql_database.with_database(None)))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", SPARK_LOCAL)
    ends = []
    for number in range(2):
        writers = writing(mysql_database, 3, 20 + number, "orders", "payments")
        dag_run = run_dag(
            "custom_example.py",
            dag_id,
            {"first_start": first_start},
            logical_date=now() + datetime.timedelta(seconds=4),
        )
        assert set(task_states(dag_run).values()) == {"success"}
        record = xcom_value(dag_run, "publish")
        assert record["start_gtids"] == (ends[-1] if ends else first_start)
        ends.append(record["end_gtids"])
        assert_exact_at(frozen_replica, record, tmp_path, database, "orders", "payments")
        finish(writers)
