"""The shipped example DAG end to end: real Airflow runs, real MySQL, spark-submit, Delta.

Each test configures ``dags/mysql_cdc_daily.py`` through a JSON file (as a user would), with a
short fixed interval (``every 6s``) so several runs fit in a test; ``dag.test(logical_date=T)``
runs the interval ending at ``T``. Running a date again replaces that run (``dag.test`` deletes
and recreates it): every task runs again with fresh XComs, as after a clear in the UI.
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.airflow import load_dag, task_states, xcom_value
from tests.support.frozen_replica import FrozenReplica
from tests.support.mysql import create_user
from tests.support.pipeline import (
    ALL_TASKS,
    Pipeline,
    assert_exact,
    assert_exact_at,
    chain_records,
    checkpoint,
    finish,
    kill_application_after_a_batch,
    now,
    seed,
    writing,
)

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db")]


def test_daily_runs_with_a_concurrent_writer_keep_the_lake_equal_to_the_source(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    database = mysql_database.database
    seed(mysql_database, "orders", 200)
    seed(mysql_database, "payments", 150)
    password = "Pipeline-Secret-93q"
    user = create_user(
        mysql_database, "cdc_pipeline", password,
        "REPLICATION SLAVE, REPLICATION CLIENT ON *.*", f"SELECT ON `{database}`.*",
    )  # fmt: skip
    pipeline = Pipeline(monkeypatch, tmp_path, user, [f"{database}.orders", f"{database}.payments"])
    previous_end = None
    for number in range(3):
        # The writers go on past the interval end: the run tails the binlog until the end passes,
        # and the lake is compared with the source as of the published end set while they write.
        writers = writing(mysql_database, 9, 10 * number, "orders", "payments")
        dag_run = pipeline.run(now() + datetime.timedelta(seconds=6))
        assert task_states(dag_run) == dict.fromkeys(ALL_TASKS, "success")
        record = checkpoint(dag_run)
        if previous_end is not None:
            assert record["start_gtids"] == previous_end  # the chain: this run starts where the last ended
        assert GtidSet.parse(record["end_gtids"]) == pipeline.lake_position()  # the second witness agrees
        assert record["already_applied"] is False
        assert_exact_at(frozen_replica, record, pipeline.lake, database, "orders", "payments")
        finish(writers)
        previous_end = record["end_gtids"]
    assert xcom_value(dag_run, "replicate", "snapshot")["tables"] == []  # only the first run snapshots
    output = capfd.readouterr()
    assert "Spark-Submit cmd" in output.out + output.err
    assert password not in output.out + output.err


def test_failed_retried_cleared_and_caught_up_runs_apply_everything_once(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    database = mysql_database.database
    seed(mysql_database, "orders", 120)
    pipeline = Pipeline(monkeypatch, tmp_path, mysql_database.with_database(None), [f"{database}.orders"])
    first_end = now() + datetime.timedelta(seconds=2)
    first = pipeline.run(first_end)
    assert task_states(first)["replicate"] == "success"
    assert_exact_at(frozen_replica, checkpoint(first), pipeline.lake, database, "orders")

    # Run 2 dies in the middle of its segment (kill -9 of the application after a committed batch),
    # while it tails the binlog live towards an interval end well in the future.
    second_end = now() + datetime.timedelta(seconds=20)
    writers = writing(mysql_database, 6, 1, "orders")
    killer = kill_application_after_a_batch(pipeline, pipeline.lake_position())
    failed = pipeline.run(second_end)
    killer.join()
    finish(writers)
    assert task_states(failed)["replicate"] == "failed"
    # The retry (a clear in the UI) finishes the segment from where the lake stopped.
    retried = pipeline.run(second_end)
    assert task_states(retried) == dict.fromkeys(ALL_TASKS, "success")
    second = checkpoint(retried)
    assert second["already_applied"] is False
    assert_exact_at(frozen_replica, second, pipeline.lake, database, "orders")

    # The DAG is "paused" for two intervals while writes go on; then their runs go in date order, as
    # the scheduler sends queued runs. The first starts more than one interval (6 s) late: it catches
    # the whole backlog up, to the time it starts; the second finds its interval covered and skips
    # Spark. (Runs going out of order, a failed run cleared later: test_pipeline_under_the_scheduler.)
    ends = []
    for _ in range(2):
        finish(writing(mysql_database, 1.5, 7, "orders"))
        ends.append(now())
        time.sleep(0.3)
    time.sleep(7)  # more than one interval (6 s) passes before the queued runs start
    catching_up = pipeline.run(ends[0])
    assert task_states(catching_up) == dict.fromkeys(ALL_TASKS, "success")
    later = checkpoint(catching_up)
    assert (later["start_gtids"], later["previous_run_id"]) == (second["end_gtids"], second["run_id"])
    assert later["segment_start"] == second["segment_end"]
    assert datetime.datetime.fromisoformat(later["segment_end"]) > ends[1]
    assert_exact_at(frozen_replica, later, pipeline.lake, database, "orders")
    lake_before = pipeline.lake_position()
    covered = pipeline.run(ends[1])
    assert task_states(covered) == dict.fromkeys(ALL_TASKS, "success")
    assert checkpoint(covered) == later
    assert xcom_value(covered, "replicate", "applied") is None  # no Spark application ran
    assert pipeline.lake_position() == lake_before
    assert_exact(mysql_database, pipeline.lake, database, "orders")  # and equal now: nothing after it

    # Clearing the old run 2 republishes its record as it was (rows applied included): no rewrite.
    cleared = pipeline.run(second_end)
    assert task_states(cleared) == dict.fromkeys(ALL_TASKS, "success")
    assert checkpoint(cleared) == second
    assert pipeline.lake_position() == lake_before
    assert chain_records(pipeline.lake) == [checkpoint(first), second, later]

    # A run dated before the pipeline's first interval is refused, saying from where to backfill.
    capfd.readouterr()
    before = pipeline.run(first_end - datetime.timedelta(seconds=30))
    assert task_states(before)["load_checkpoint"] == "failed"
    assert pipeline.lake_position() == lake_before
    output = capfd.readouterr()
    assert "before the pipeline's first interval" in output.out + output.err
    assert f"--from-date {checkpoint(first)['segment_end']}" in output.out + output.err


def test_a_manual_run_without_a_logical_date_is_refused_with_an_explanation(
    mysql_database: MySqlEndpoint,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    database = mysql_database.database
    seed(mysql_database, "orders", 5)
    pipeline = Pipeline(monkeypatch, tmp_path, mysql_database.with_database(None), [f"{database}.orders"])
    dag_run = load_dag("pipeline_daily.py", pipeline.dag_id).test(logical_date=None)
    states = task_states(dag_run)
    assert states["load_checkpoint"] == "failed"
    assert states["replicate"] == "upstream_failed"
    output = capfd.readouterr()
    assert "this run has no logical date, so it has no place in the checkpoint" in output.out + output.err
