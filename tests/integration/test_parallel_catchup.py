"""Parallel catch-up by GTID ranges gives the lake the single reader gives: real MySQL, Delta, Spark."""

from __future__ import annotations

import logging
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyResult
from airflow_mysql_cdc.engine.apply.parallel_catchup import run_parallel_catchup
from airflow_mysql_cdc.engine.apply.range_reader import RangeRunner, run_ranges_in_threads, spark_range_runner
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.lake.delta_layout import GTID_COLUMN, SEQUENCE_COLUMN
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.runtime.executor_probe import EXECUTOR_REQUIREMENTS
from airflow_mysql_cdc.engine.runtime.spark_tasks import (
    ExecutorCapacityError,
    ExecutorRequirementsError,
    SparkTasks,
)
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.integration.test_binlog_reader import gtid_executed
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source, orders_apply_config
from tests.support.mysql import ServerPool, execute

pytestmark = pytest.mark.mysql


def _config(database: str, lake: Path, start: GtidSet, **overrides) -> ApplyConfig:
    return orders_apply_config(
        database, lake, start, **{"mode": "until_caught_up", "batch_max_rows": 150, **overrides}
    )


def _rows(path: Path, order: list[str]) -> list[dict]:
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda row: tuple(str(row[column]) for column in order))


def _assert_same_lake(single: Path, parallel: Path, database: str) -> None:
    """Target and changelog hold the same rows, every column, the _cdc_ ones included."""
    layout_single, layout_parallel = LakeLayout(single), LakeLayout(parallel)
    assert _rows(layout_single.target(database, "orders"), ["id"]) == _rows(
        layout_parallel.target(database, "orders"), ["id"]
    )
    changelog_order = [GTID_COLUMN, SEQUENCE_COLUMN]
    assert _rows(layout_single.changelog(database, "orders"), changelog_order) == _rows(
        layout_parallel.changelog(database, "orders"), changelog_order
    )


def _write_history(endpoint: MySqlEndpoint, seconds: float) -> GtidSet:
    execute(endpoint, ConcurrentWriter.DDL)
    start = gtid_executed(endpoint)
    writer = ConcurrentWriter(endpoint, seconds=seconds)
    writer.run()
    assert writer.error is None and writer.transactions > 30
    return start


def _both(
    endpoint: MySqlEndpoint, tmp_path: Path, config: ApplyConfig, runner: RangeRunner, **options
) -> tuple[ApplyResult, ApplyResult]:
    single = run_apply(config, endpoint)
    parallel_config = ApplyConfig(**{**config.__dict__, "lake_root": str(tmp_path / "parallel")})
    parallel = run_parallel_catchup(parallel_config, endpoint, run_ranges=runner, **options)
    return single, parallel


@pytest.mark.parametrize("columnar", [True, False], ids=["change-tables", "transactions"])
def test_parallel_catchup_gives_the_same_lake_as_the_single_reader(
    mysql_database: MySqlEndpoint, tmp_path: Path, columnar: bool
) -> None:
    database = mysql_database.database
    start = _write_history(mysql_database, seconds=1.5)
    config = _config(database, tmp_path / "single", start)
    # Three readers, waves of a few dozen transactions: ranges inside waves and waves after waves.
    single, parallel = _both(
        mysql_database,
        tmp_path,
        config,
        run_ranges_in_threads,
        parallelism=3,
        wave_transactions=400,
        columnar=columnar,
    )
    assert parallel.end_gtids == single.end_gtids
    assert parallel.transactions == single.transactions
    assert parallel.rows_by_table == single.rows_by_table
    _assert_same_lake(tmp_path / "single", tmp_path / "parallel", database)
    assert_lake_equals_source(mysql_database, tmp_path / "parallel", database, "orders")


def test_parallel_catchup_in_spark_local_2_tasks_gives_the_same_lake_as_the_single_reader(
    mysql_database: MySqlEndpoint, tmp_path: Path, spark_local_2: Any
) -> None:
    database = mysql_database.database
    start = _write_history(mysql_database, seconds=1.0)
    target = gtid_executed(mysql_database)
    config = _config(database, tmp_path / "single", start, mode="until_gtid_set", target_gtids=target)
    single, parallel = _both(
        mysql_database,
        tmp_path,
        config,
        spark_range_runner(SparkTasks(spark_local_2.sparkContext)),
        parallelism=2,
    )
    assert parallel.end_gtids == single.end_gtids == target
    _assert_same_lake(tmp_path / "single", tmp_path / "parallel", database)


def test_parallel_segment_catchup_cuts_at_the_same_commit_timestamp_as_the_single_reader(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    execute(mysql_database, ConcurrentWriter.DDL)
    start = gtid_executed(mysql_database)
    ConcurrentWriter(mysql_database, seconds=1.0, seed=1).run()
    boundary_us = int(time.time() * 1_000_000)
    ConcurrentWriter(mysql_database, seconds=1.0, seed=2).run()
    time.sleep(1.2)  # past the boundary plus the settle margin: a past segment
    config = _config(database, tmp_path / "single", start, mode="segment", segment_end_us=boundary_us)
    single, parallel = _both(
        mysql_database, tmp_path, config, run_ranges_in_threads, parallelism=2, wave_transactions=300
    )
    end = single.end_gtids
    executed = gtid_executed(mysql_database)
    # The cut fell inside the written history.
    assert start.issubset(end) and end.issubset(executed) and start != end != executed
    assert parallel.end_gtids == single.end_gtids
    _assert_same_lake(tmp_path / "single", tmp_path / "parallel", database)


def test_gtids_numbered_out_of_binlog_order_fall_back_to_the_single_reader(
    mysql_servers: ServerPool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A server of its own: hand-numbered GTIDs of a made-up UUID would stay in the shared server's
    # gtid_executed, where other tests expect only the server's own UUID.
    server = mysql_servers.start(name="gtids-out-of-order")
    database = "out_of_order"
    execute(server.endpoint, f"CREATE DATABASE {database}")
    endpoint = server.endpoint.with_database(database)
    execute(endpoint, ConcurrentWriter.DDL)
    start = gtid_executed(endpoint)
    fake = str(uuid.uuid4())
    for number, key in ((2, 10), (1, 11), (3, 12)):  # binlog order 2, 1, 3
        execute(
            endpoint,
            f"SET gtid_next = '{fake}:{number}'",
            f"INSERT INTO orders VALUES ({key}, 'c', 1, 'new', NULL, NULL)",
            "SET gtid_next = 'AUTOMATIC'",
        )
    config = _config(database, tmp_path / "single", start)
    with caplog.at_level(logging.WARNING, logger="airflow_mysql_cdc.apply"):
        single, parallel = _both(endpoint, tmp_path, config, run_ranges_in_threads, parallelism=2)
    server.stop()
    assert any("continuing with the single reader" in record.message for record in caplog.records)
    assert parallel.end_gtids == single.end_gtids
    _assert_same_lake(tmp_path / "single", tmp_path / "parallel", database)


def test_a_schema_change_in_a_parallel_catchup_continues_with_the_single_reader_to_the_same_lake(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    start = _write_history(mysql_database, seconds=0.6)
    execute(mysql_database, "ALTER TABLE orders ADD COLUMN score INT NOT NULL DEFAULT 4")
    writer = ConcurrentWriter(mysql_database, seconds=0.6, seed=3)
    writer.run()
    assert writer.error is None
    config = _config(database, tmp_path / "single", start)
    single, parallel = _both(
        mysql_database, tmp_path, config, run_ranges_in_threads, parallelism=3, wave_transactions=100
    )
    assert parallel.end_gtids == single.end_gtids
    assert (
        [c.action for c in parallel.schema_changes] == [c.action for c in single.schema_changes] == ["evolve"]
    )
    _assert_same_lake(tmp_path / "single", tmp_path / "parallel", database)
    assert_lake_equals_source(mysql_database, tmp_path / "parallel", database, "orders")


def test_executors_lacking_a_required_module_are_refused_once_by_name_before_any_task(spark_local_2) -> None:
    """A probe shipped by value names what the executors' Python lacks (instead of every task failing)."""
    spark = SparkTasks(spark_local_2.sparkContext)
    spark.require(EXECUTOR_REQUIREMENTS, name="parallel catch-up")  # this machine's workers have them
    with pytest.raises(ExecutorRequirementsError) as refused:
        spark.require((*EXECUTOR_REQUIREMENTS, "no_such_module_on_executors"), name="snapshot")
    message = str(refused.value)
    assert "snapshot: the Spark executors cannot run the engine" in message
    assert f"{sys.executable} (Python " in message and "lacks no_such_module_on_executors." in message
    assert "docs/deployment.md" in message and refused.value.exit_code == ExitCode.CONFIGURATION


def test_executors_that_take_no_task_within_the_wait_cancel_the_check_and_say_so(spark_local_2) -> None:
    """A full cluster would leave Spark waiting forever ("Initial job has not accepted any resources");
    here the wait is zero, so the real check job is still queued or running when it is cancelled."""
    with pytest.raises(ExecutorCapacityError, match="no Spark executor took a task within 0 s") as refused:
        SparkTasks(spark_local_2.sparkContext, executor_wait_s=0.0).require(
            EXECUTOR_REQUIREMENTS, name="snapshot"
        )
    assert "spark.airflow_mysql_cdc.executor_wait_s" in str(refused.value)
    assert refused.value.exit_code == ExitCode.FAILED  # retryable: capacity may come back
    SparkTasks(spark_local_2.sparkContext).require(EXECUTOR_REQUIREMENTS, name="snapshot")  # still usable
