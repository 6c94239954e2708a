"""The snapshot operator on a real Spark standalone cluster in client mode: windows run on the
cluster's executors, and the password is in the argv of no process on the host meanwhile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.operators.snapshot import MySqlCdcSnapshotOperator
from tests.support.airflow import connection_env
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source
from tests.support.mysql import create_user, execute
from tests.support.process_arguments import ArgvWatch
from tests.support.spark_cluster import SparkStandaloneCluster

pytestmark = [pytest.mark.mysql, pytest.mark.slow, pytest.mark.xdist_group("spark_standalone")]
EXECUTOR = "CoarseGrainedExecutorBackend"
DRIVER = "snapshot_to_delta.py"


def test_snapshot_windows_run_on_standalone_executors_with_the_password_in_no_process_argv(
    mysql_database: MySqlEndpoint,
    spark_standalone: SparkStandaloneCluster,
    lean_executor_python: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    database = mysql_database.database
    execute(mysql_database, ConcurrentWriter.DDL)
    values = ", ".join(f"({i}, 'c{i}', {i}.5, 'new', NULL, NOW(6))" for i in range(1, 301))
    execute(mysql_database, f"INSERT INTO orders VALUES {values}")
    password = "Standalone-Secret-58k"
    user = create_user(
        mysql_database,
        "cdc_standalone",
        password,
        "REPLICATION SLAVE, REPLICATION CLIENT ON *.*",
        f"SELECT ON `{database}`.*",
    )
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", connection_env(user, server_id=6301))
    master = {"conn_type": "spark", "host": "spark://127.0.0.1", "port": spark_standalone.master_port}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_STANDALONE", json.dumps(master))
    applications_before = spark_standalone.application_folders()
    operator = MySqlCdcSnapshotOperator(
        task_id="snapshot",
        mysql_cdc_conn_id="cdc_source",
        spark_conn_id="spark_standalone",
        tables=f"{database}.orders",
        lake_root=str(tmp_path / "lake"),
        chunk_size=50,
        spark_conf={
            "spark.pyspark.python": str(lean_executor_python),  # no package, no deltalake, no Airflow
            "spark.executor.memory": "512m",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
        },
    )
    with ArgvWatch(password, markers=(EXECUTOR, DRIVER)) as watch:
        result = operator.execute({})
    assert watch.exposed == {}
    seen = " ".join(watch.seen.values())
    assert EXECUTOR in seen, "no executor of the standalone worker was seen during the run"
    assert DRIVER in seen, "the driver (spark-submit and its Python process) was never scanned"
    applications = [a for a in spark_standalone.application_folders() if a not in applications_before]
    executor_logs = "".join(
        log.read_text(errors="replace")
        for application in applications
        for log in application.glob("*/stderr")
    )
    assert "Running task" in executor_logs
    assert result["tables"][0]["chunks_total"] >= 6
    assert_lake_equals_source(mysql_database, tmp_path / "lake", database, "orders")
