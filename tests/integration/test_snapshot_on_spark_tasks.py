"""Snapshot windows as real Spark tasks (local[2], Python workers apart from the driver): the rows
stay where they are read, only file descriptions reach the driver, and tasks carry no password."""

from __future__ import annotations

import pickle
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from airflow_mysql_cdc.engine.entrypoints.snapshot_to_delta import run_windows_on_spark
from airflow_mysql_cdc.engine.runtime.executor_secrets import ExecutorSecrets
from airflow_mysql_cdc.engine.runtime.spark_tasks import SparkTasks
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.support.lake import assert_lake_equals_source
from tests.support.mysql import create_user
from tests.support.pipeline import seed

pytestmark = pytest.mark.mysql
PASSWORD = "Spark-Task-Secret-4Jm"


class RecordingSparkTasks(SparkTasks):
    """Spark tasks whose results (what crosses to the driver) and shipped tasks are kept for the test."""

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self.result_bytes: list[int] = []
        self.shipped: list[bytes] = []

    def run(self, function, tasks, *, description=None):  # type: ignore[no-untyped-def]
        self.shipped += [pickle.dumps(task) for task in tasks]
        results = super().run(function, tasks, description=description)
        self.result_bytes += [len(result) for result in results]
        return results


def _snapshot(
    endpoint: MySqlEndpoint, lake: Path, table: str, chunk_size: int, spark_local_2: Any, **options: Any
) -> Any:
    spark = RecordingSparkTasks(spark_local_2.sparkContext)
    secrets = ExecutorSecrets(spark_local_2.sparkContext)
    try:
        result = snapshot_table(
            endpoint, lake, table, chunk_size=chunk_size,
            run_windows=partial(run_windows_on_spark, spark, secrets), **options,
        )  # fmt: skip
    finally:
        secrets.withdraw()
    return result, spark


def test_rows_stay_on_the_executors_and_what_reaches_the_driver_does_not_grow_with_the_table(
    mysql_database: MySqlEndpoint, tmp_path: Path, spark_local_2: Any
) -> None:
    database = mysql_database.database
    user = create_user(
        mysql_database, "cdc_spark_tasks", PASSWORD,
        "REPLICATION SLAVE, REPLICATION CLIENT ON *.*", f"SELECT ON `{database}`.*",
    )  # fmt: skip
    source = user.with_database(database)
    seed(mysql_database, "small", 400)
    seed(mysql_database, "large", 8000)
    small, small_spark = _snapshot(source, tmp_path, f"{database}.small", 100, spark_local_2)
    large, large_spark = _snapshot(source, tmp_path, f"{database}.large", 2000, spark_local_2)
    for table in ("small", "large"):
        assert_lake_equals_source(mysql_database, tmp_path, database, table)
    assert small.chunks_total == large.chunks_total  # same number of windows, 20 times the rows each
    per_window = [sum(spark.result_bytes) / len(spark.result_bytes) for spark in (small_spark, large_spark)]
    assert max(per_window) < 1000, per_window
    assert per_window[1] < per_window[0] * 1.2, per_window  # not the rows: 20 times as many cost nothing
    # The executors logged in with the password they read from the application's broadcast secrets
    for shipped in small_spark.shipped + large_spark.shipped:
        assert PASSWORD.encode() not in shipped
    # Where executors do not write (gs://, abfss://; here by choice) the rows come to the driver
    funnel, funnel_spark = _snapshot(
        source, tmp_path / "funnel", f"{database}.large", 2000, spark_local_2, executor_writes=False
    )
    # 48 times as many bytes here (a file's description, watermarks and their read time: ~440 bytes a
    # window, whatever its rows)
    assert funnel.rows == 8000 and sum(funnel_spark.result_bytes) > 40 * sum(large_spark.result_bytes)
    assert_lake_equals_source(mysql_database, tmp_path / "funnel", database, "large")
