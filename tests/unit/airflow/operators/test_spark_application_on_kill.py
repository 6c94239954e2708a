""" "Mark failed" from the UI, as the Task SDK carries it out, against an application that is slow to stop.

Airflow 3's supervisor sends the task process SIGTERM, whose handler (the task runner's ``_on_term``)
calls the operator's ``on_kill``, and SIGKILLs the process 5 s later. The task process here is a
fresh interpreter running ``SparkApplicationOperator.run_application`` with that handler; spark-submit
is a stand-in that ignores SIGTERM (a driver busy committing its batch), the worst case for the window.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from airflow_mysql_cdc.hooks.attempt_marker import AttemptMarker
from airflow_mysql_cdc.hooks.attempt_recovery import ROOT_FOLDER, group_alive

AIRFLOW_SIGKILL_AFTER_S = 5.0
"""The Task SDK supervisor's ``kill(SIGTERM, force=True)``: SIGKILL this long after SIGTERM."""

SLOW_TO_STOP = """#!{python}
import os, pathlib, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pathlib.Path(os.environ["STAND_IN_READY"]).touch()
print("spark-submit stand-in running", flush=True)
time.sleep(120)
"""

TASK_PROCESS = """
import signal
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.operators.spark_application import ApplicationSecrets, SparkApplicationOperator

operator = SparkApplicationOperator(task_id="apply", spark_conn_id="spark_local")
signal.signal(signal.SIGTERM, lambda signum, frame: operator.on_kill())  # the task runner's _on_term
operator.run_application(
    "app.py", name="marked failed", config_json="{}",
    secrets=ApplicationSecrets.of(MySqlEndpoint(host="127.0.0.1", user="cdc", password="pw"), {}),
)
"""


def _running_application(
    root: Path, ready: Path, task: subprocess.Popen, timeout_s: float = 60
) -> AttemptMarker:
    """The marker naming the application, once the stand-in ignores SIGTERM."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for marker_file in root.glob("*/*/attempt.json") if ready.exists() else ():
            marker = AttemptMarker.from_json(marker_file.read_text())
            if marker.application is not None:
                return marker
        assert task.poll() is None, "the task process ended before its application started"
        time.sleep(0.1)
    raise AssertionError("the application never started")


def test_marking_the_task_failed_stops_its_application_and_removes_its_work_dir_before_airflow_kills_it(
    tmp_path: Path,
) -> None:
    bin_dir, temp_dir = tmp_path / "bin", tmp_path / "tmp"
    bin_dir.mkdir()
    temp_dir.mkdir()
    spark_submit = bin_dir / "spark-submit"
    spark_submit.write_text(SLOW_TO_STOP.format(python=sys.executable))
    spark_submit.chmod(0o755)
    environment = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "TMPDIR": str(temp_dir),
        "STAND_IN_READY": str(tmp_path / "ready"),
        "AIRFLOW_CONN_SPARK_LOCAL": json.dumps({"conn_type": "spark", "host": "local[2]"}),
    }
    task_log = (tmp_path / "task.log").open("w")
    task = subprocess.Popen(
        [sys.executable, "-c", TASK_PROCESS], env=environment, stdout=task_log, stderr=subprocess.STDOUT
    )
    try:
        marker = _running_application(temp_dir / ROOT_FOLDER, tmp_path / "ready", task)
        task.send_signal(signal.SIGTERM)  # "mark failed": the supervisor's SIGTERM ...
        try:
            task.wait(timeout=AIRFLOW_SIGKILL_AFTER_S)
        except subprocess.TimeoutExpired:
            task.kill()  # ... and its SIGKILL 5 s later
            task.wait()
    finally:
        if task.poll() is None:
            task.kill()
        task_log.close()
    assert marker.application is not None and not group_alive(marker.application)
    assert not (temp_dir / ROOT_FOLDER / "marked_failed").exists(), "the attempt's work dir was left"
