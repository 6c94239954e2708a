"""kill -9 of the task process running the binlog operator: the next attempt adopts its orphan.

The task process is a child Python process running the operator (as Airflow's task runner does);
killing it with -9 leaves spark-submit and its Python driver running under PID 1, nothing of the
operator's cleanup runs, and its work dir stays. The next try of the same task, with the same
configuration, finds the orphan through its work dir's marker, waits for it, and returns what it
applied: the record counts the run's changes although the attempt that applied them died.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.operators import attempt_recovery
from airflow_mysql_cdc.operators.attempt_marker import TaskAttempt
from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from tests.support.airflow import connection_env
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source, changelog_entries
from tests.support.mysql import execute, scalar

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db")]
SPARK_LOCAL = json.dumps({"conn_type": "spark", "host": "local[2]"})
TASK_PROCESS = """
import json, sys
from airflow_mysql_cdc.operators import attempt_recovery
from airflow_mysql_cdc.operators.attempt_marker import TaskAttempt
from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
attempt_recovery.current_attempt = lambda: TaskAttempt(**json.loads(sys.argv[1]))
MySqlCdcBinlogApplyOperator(**json.loads(sys.argv[2])).execute({})
"""


def _driver_of(task_process: subprocess.Popen, deadline_s: float = 120) -> psutil.Process:
    """The binlog application's Python driver under ``task_process``, once it runs."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        assert task_process.poll() is None, "the task process ended before its application started"
        for child in psutil.Process(task_process.pid).children(recursive=True):
            try:
                command = child.cmdline()
            except psutil.Error:
                continue
            if command and "python" in command[0] and any("binlog_to_delta" in part for part in command):
                return child
        time.sleep(0.2)
    raise AssertionError("the application's driver never started")


def _gone(process: psutil.Process) -> bool:
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_retry_after_kill_9_of_the_task_process_adopts_the_orphaned_application_and_its_count(
    mysql_database: MySqlEndpoint,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    database = mysql_database.database
    execute(mysql_database, ConcurrentWriter.DDL)
    start = GtidSet.parse(scalar(mysql_database, "SELECT @@gtid_executed"))
    ConcurrentWriter(mysql_database, seconds=1).run()
    # The run ends at transactions not written yet: the orphan is still tailing when its task
    # process dies and when the retry arrives, however slowly Spark starts on a loaded host.
    written = GtidSet.parse(scalar(mysql_database, "SELECT @@gtid_executed"))
    uuid = str(scalar(mysql_database, "SELECT @@server_uuid"))
    target = written | GtidSet.parse(f"{uuid}:1-{written.max_per_uuid()[uuid] + 5}")
    monkeypatch.setenv(
        "AIRFLOW_CONN_CDC_SOURCE", connection_env(mysql_database.with_database(None), server_id=6131)
    )
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", SPARK_LOCAL)
    pipeline_id = f"orphan_{tmp_path.name[-12:]}"
    operator_arguments = {
        "task_id": "apply", "mysql_cdc_conn_id": "cdc_source", "spark_conn_id": "spark_local",
        "tables": f"{database}.orders", "lake_root": str(tmp_path / "lake"), "pipeline_id": pipeline_id,
        "start_gtids": str(start), "mode": "until_gtid_set", "target_gtids": str(target),
    }  # fmt: skip
    first_try = TaskAttempt("dag", "run", "apply", -1, 1)
    task_process = subprocess.Popen(
        [sys.executable, "-c", TASK_PROCESS, json.dumps(first_try.__dict__), json.dumps(operator_arguments)]
    )
    driver = _driver_of(task_process)
    spark_submit = next(p for p in driver.parents() if p.ppid() == task_process.pid)
    time.sleep(3)  # mid-apply: the driver claimed the pipeline and applies
    task_process.kill()
    task_process.wait()
    assert not _gone(driver) and not _gone(spark_submit), "the application should outlive its task process"

    second_try = TaskAttempt("dag", "run", "apply", -1, 2)
    monkeypatch.setattr(attempt_recovery, "current_attempt", lambda: second_try)
    capfd.readouterr()
    # The run's last five transactions come while the retry waits for the orphan.
    late = [f"INSERT INTO orders VALUES ({100_000 + n}, 'late', 1.00, 'new', NULL, NOW(6))" for n in range(5)]
    threading.Timer(5, execute, (mysql_database, *late)).start()
    result = MySqlCdcBinlogApplyOperator(**operator_arguments).execute({})

    log = capfd.readouterr().out
    assert "wait for it and adopt its result" in log and "Adopted its result" in log, log[-3000:]
    assert "Spark-Submit cmd" not in log, "the retry started an application of its own"
    assert _gone(driver) and _gone(spark_submit)
    root = attempt_recovery.work_root(f"mysql-cdc-apply-{pipeline_id}")
    assert not root.exists(), "the killed attempt's work dir (or the emptied root) outlived its recovery"
    assert not result["already_applied"] and target.issubset(GtidSet.parse(result["end_gtids"]))
    run_changes = GtidSet.parse(result["end_gtids"]) - start
    entries = changelog_entries(tmp_path / "lake", database, "orders")
    changes = [entry for entry in entries if GtidSet.parse(entry[0]).issubset(run_changes)]
    assert result["rows_by_table"][f"{database}.orders"] == len(changes) > 0
    assert_lake_equals_source(mysql_database, tmp_path / "lake", database, "orders")
