"""The shipped example DAG's resumability task looks ahead: the binlog headroom of each run's
checkpoint, judged against the configured schedule, in its log and its XCom value."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.support.airflow import task_states, xcom_value
from tests.support.mysql import execute
from tests.support.pipeline import ALL_TASKS, Pipeline, now, seed

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db"), pytest.mark.slow]


def test_each_run_reports_the_headroom_of_its_checkpoint_and_warns_below_the_configured_runs(
    mysql_database: MySqlEndpoint,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    database = mysql_database.database
    seed(mysql_database, "orders", 20)
    # One hour of binlogs (stated, as on Cloud SQL), against 1000 runs of 6 s: below the threshold.
    pipeline = Pipeline(
        monkeypatch, tmp_path, mysql_database.with_database(None), [f"{database}.orders"],
        binlog_retention_hours=1, retention_headroom_runs=1000,
    )  # fmt: skip
    first = pipeline.run(now() + datetime.timedelta(seconds=6))
    assert task_states(first) == dict.fromkeys(ALL_TASKS, "success")
    assert xcom_value(first, "resumability")["verdict"] == "first_run"  # nothing to look ahead of yet

    execute(mysql_database, "INSERT INTO orders VALUES (21, 'c21', 21.5, 'new', NULL, NOW(6))")
    second = pipeline.run(now() + datetime.timedelta(seconds=6))
    assert task_states(second) == dict.fromkeys(ALL_TASKS, "success")
    looked_ahead = xcom_value(second, "resumability")
    headroom = looked_ahead["headroom"]
    assert headroom["level"] == "low" and headroom["threshold_s"] == 6000
    assert 3000 < headroom["headroom_s"] <= 3600
    assert headroom["retention"]["source"].startswith("binlog_retention_hours in the pipeline configuration")
    assert headroom["to_change"] == "SET PERSIST binlog_expire_logs_seconds = 7200;"
    assert looked_ahead["staleness"]["behind_s"] is not None  # the server moved on since the first run
    log = "".join(capfd.readouterr())
    assert f"its binlog file {headroom['needed_file']}" in log
    assert "That is less than 1000 schedule intervals (1 h 40 min)" in log
