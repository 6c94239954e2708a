"""kill -9 of the task process running the binlog operator: the next attempt adopts its orphan.

The task process is a child Python process running the operator (as Airflow's task runner does);
killing it with -9 leaves spark-submit and its Python driver running under PID 1, nothing of the
operator's cleanup runs, and its work dir stays. The next try of the same task, with the same
configuration, finds the orphan through its work dir's marker, waits for it, and returns what it
applied: the record counts the run's changes although the attempt that applied them died.

The first try is killed once its application has claimed the pipeline (its log says so) and while the
segment is still open, so the orphan is applying live changes when the retry arrives: the retry must
wait for it, not start an application of its own.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.hooks import attempt_recovery
from airflow_mysql_cdc.hooks.attempt_marker import TaskAttempt
from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from tests.support.airflow import connection_env
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source, changelog_entries
from tests.support.mysql import execute, scalar
from tests.support.processes import binlog_driver_under, gone

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db")]
SPARK_LOCAL = json.dumps({"conn_type": "spark", "host": "local[2]"})
SEGMENT_S = 60
"""The segment ends this long after the test starts: Spark starts and claims well within it, even on a
loaded host, so the orphan is tailing the live binlog when it is orphaned and when the retry comes."""
LATE_AFTER_S = 3
TASK_PROCESS = """
import json, sys
from airflow_mysql_cdc.hooks import attempt_recovery
from airflow_mysql_cdc.hooks.attempt_marker import TaskAttempt
from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
attempt_recovery.current_attempt = lambda: TaskAttempt(**json.loads(sys.argv[1]))
MySqlCdcBinlogApplyOperator(**json.loads(sys.argv[2])).execute({})
"""


def _claimed_driver(task_process: subprocess.Popen, deadline_s: float = 180) -> psutil.Process:
    """The binlog application's Python driver under ``task_process``, once it claimed the pipeline
    (its log says so): from then on it is applying, and a kill -9 of the task process orphans it."""
    assert task_process.stdout is not None
    claimed = threading.Event()

    def drain() -> None:  # the task process's log, read to its end (a full pipe would block it)
        for line in task_process.stdout:
            if "claimed epoch" in line:
                claimed.set()

    threading.Thread(target=drain, daemon=True).start()
    if not claimed.wait(deadline_s):
        raise AssertionError(f"the application did not claim the pipeline within {deadline_s:.0f} s")
    driver = binlog_driver_under(task_process.pid)
    assert driver is not None, "the application claimed the pipeline but its driver is not running"
    return driver


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
    written = GtidSet.parse(scalar(mysql_database, "SELECT @@gtid_executed"))
    monkeypatch.setenv(
        "AIRFLOW_CONN_CDC_SOURCE", connection_env(mysql_database.with_database(None), server_id=6131)
    )
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", SPARK_LOCAL)
    pipeline_id = f"orphan_{tmp_path.name[-12:]}"
    # The segment ends a while from now: the orphan is still tailing when its task process dies and
    # when the retry arrives (checked below), and transactions committed meanwhile belong to the run.
    segment_end = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=SEGMENT_S)
    operator_arguments = {
        "task_id": "apply", "mysql_cdc_conn_id": "cdc_source", "spark_conn_id": "spark_local",
        "tables": f"{database}.orders", "lake_root": str(tmp_path / "lake"), "pipeline_id": pipeline_id,
        "start_gtids": str(start), "segment_end": segment_end.isoformat(),
    }  # fmt: skip
    first_try = TaskAttempt("dag", "run", "apply", -1, 1)
    task_process = subprocess.Popen(
        [sys.executable, "-c", TASK_PROCESS, json.dumps(first_try.__dict__), json.dumps(operator_arguments)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    driver = _claimed_driver(task_process)
    spark_submit = next(p for p in driver.parents() if p.ppid() == task_process.pid)
    task_process.kill()
    task_process.wait()
    assert not gone(driver) and not gone(spark_submit), "the application should outlive its task process"
    left_s = (segment_end - datetime.datetime.now(datetime.UTC)).total_seconds()
    assert left_s > LATE_AFTER_S + 5, f"Spark started slowly: the segment ends {left_s:.0f} s after the kill"

    second_try = TaskAttempt("dag", "run", "apply", -1, 2)
    monkeypatch.setattr(attempt_recovery, "current_attempt", lambda: second_try)
    capfd.readouterr()
    # Five more transactions of the run come while the retry waits for the orphan.
    late = [f"INSERT INTO orders VALUES ({100_000 + n}, 'late', 1.00, 'new', NULL, NOW(6))" for n in range(5)]
    threading.Timer(LATE_AFTER_S, execute, (mysql_database, *late)).start()
    result = MySqlCdcBinlogApplyOperator(**operator_arguments).execute({})

    log = capfd.readouterr().out
    markers = ("Found the application", "Waiting for it", "Adopted", "without a complete", "Spark-Submit cmd")
    recovery = [line for line in log.splitlines() if any(marker in line for marker in markers)]
    assert "wait for it and adopt its result" in log and "Adopted its result" in log, "\n".join(recovery)
    assert "Spark-Submit cmd" not in log, "the retry started an application of its own"
    assert gone(driver) and gone(spark_submit)
    root = attempt_recovery.work_root(f"mysql-cdc-apply-{pipeline_id}")
    assert not root.exists(), "the killed attempt's work dir (or the emptied root) outlived its recovery"
    assert not result["already_applied"] and written.issubset(GtidSet.parse(result["end_gtids"]))
    assert scalar(mysql_database, "SELECT COUNT(*) FROM orders WHERE id >= 100000") == 5
    run_changes = GtidSet.parse(result["end_gtids"]) - start
    entries = changelog_entries(tmp_path / "lake", database, "orders")
    changes = [entry for entry in entries if GtidSet.parse(entry[0]).issubset(run_changes)]
    assert result["rows_by_table"][f"{database}.orders"] == len(changes) > 0
    assert_lake_equals_source(mysql_database, tmp_path / "lake", database, "orders")
