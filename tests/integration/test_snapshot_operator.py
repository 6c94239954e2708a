"""The snapshot operator on local Spark, then the binlog operator, in one DAG run, with live writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.support.airflow import connection_env, run_dag, task_states, xcom_value
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source
from tests.support.mysql import execute

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db"), pytest.mark.slow]


def test_snapshot_on_spark_then_stream_gives_exact_tables(
    mysql_database: MySqlEndpoint,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    """Spark's web UI stays off: it would listen on every interface of the worker, unauthenticated."""
    database = mysql_database.database
    for table in ("orders", "refunds"):
        execute(mysql_database, ConcurrentWriter.DDL.replace("orders", table))
        values = ", ".join(f"({i}, 'c{i}', {i}.5, 'new', NULL, NOW(6))" for i in range(1, 301))
        execute(mysql_database, f"INSERT INTO {table} VALUES {values}")
    monkeypatch.setenv(
        "AIRFLOW_CONN_CDC_SOURCE", connection_env(mysql_database.with_database(None), server_id=6201)
    )
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    writer = ConcurrentWriter(mysql_database, seconds=12, seed=5)
    writer.start()
    dag_run = run_dag(
        "snapshot_then_stream.py",
        "test_snapshot_then_stream",
        {"tables": f"{database}.orders, {database}.refunds", "lake_root": str(tmp_path)},
    )
    writer.join()
    assert writer.error is None
    assert task_states(dag_run) == {"snapshot": "success", "stream": "success"}
    snapshot = xcom_value(dag_run, "snapshot")
    # 300 rows in chunks of 60, less what the writer deleted before the plan was made (its keys stay
    # in 1-300 or move to 301-600): several chunks, so windows run as parallel Spark tasks.
    assert all(t["chunks_total"] >= 4 for t in snapshot["tables"])
    shown = capfd.readouterr()
    output = shown.out + shown.err
    assert "--conf spark.ui.enabled=false" in output  # in the Spark-Submit cmd line of the task log
    # Spark ran the snapshot (its application's lines), and no UI started: Spark's own INFO lines are
    # kept out of the task log now (log4j2 at WARN), so only the conf above can show it is off.
    assert "INFO airflow_mysql_cdc.snapshot" in output and "SparkUI" not in output
    # The writer may have outlived the stream: catch up once more, then compare.
    dag_run = run_dag(
        "snapshot_then_stream.py",
        "test_snapshot_then_stream",
        {"tables": f"{database}.orders, {database}.refunds", "lake_root": str(tmp_path)},
    )
    assert xcom_value(dag_run, "snapshot")["tables"][0]["chunks_run"] == 0
    for table in ("orders", "refunds"):
        assert_lake_equals_source(mysql_database, tmp_path, database, table)
