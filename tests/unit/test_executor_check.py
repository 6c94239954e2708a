"""The executor check (:meth:`SparkTasks.require`), issue 34 items 2 and 3.

Its wait ends when an executor takes a task, not when the job ends, and when none does, the error
says how long it waited and how many executors had registered, so a user can tell a full cluster
from slow executor start-up. An executor Python that cannot start is a configuration error naming
host and interpreter (exit 2: the operators fail the task without retry), not Spark's raw failure.
A fake SparkContext stands in for Spark's status tracker; the real one runs in every Spark
integration test, and the interpreter failure on a standalone cluster in
``test_an_executor_python_that_cannot_start_fails_the_task_at_once_naming_host_and_interpreter``."""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.runtime.spark_tasks import (
    ExecutorCapacityError,
    ExecutorRequirementsError,
    SparkTasks,
)


@dataclass
class _Cluster:
    """What the driver sees: executors registered, and whether the check's task has started."""

    executors: int = 0
    task_started: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)


class _StatusTracker:
    def __init__(self, cluster: _Cluster) -> None:
        self.cluster = cluster

    def getJobIdsForGroup(self, group: str) -> list[int]:  # noqa: N802 - PySpark's name
        return [0]

    def getJobInfo(self, job_id: int) -> Any:  # noqa: N802 - PySpark's name
        return SimpleNamespace(stageIds=[0])

    def getStageInfo(self, stage_id: int) -> Any:  # noqa: N802 - PySpark's name
        active = 1 if self.cluster.task_started.is_set() else 0
        return SimpleNamespace(numActiveTasks=active, numCompletedTasks=0, numFailedTasks=0)


class _Context:
    """The part of a SparkContext the wait uses; ``_jsc`` lists the driver and the executors."""

    master = "spark://master:7077"
    defaultParallelism = 2  # noqa: N815 - PySpark's name

    def __init__(self, cluster: _Cluster) -> None:
        self.cluster = cluster
        infos = SimpleNamespace(getExecutorInfos=lambda: [None] * (cluster.executors + 1))
        self._jsc = SimpleNamespace(sc=lambda: SimpleNamespace(statusTracker=lambda: infos))

    def setJobGroup(self, group: str, description: str, interruptOnCancel: bool) -> None:  # noqa: N802, N803
        pass

    def cancelJobGroup(self, group: str) -> None:  # noqa: N802 - PySpark's name
        self.cluster.cancelled.set()

    def statusTracker(self) -> _StatusTracker:  # noqa: N802 - PySpark's name
        return _StatusTracker(self.cluster)


def _job_that_runs(cluster: _Cluster, *, task_starts_after_s: float | None, runs_s: float) -> Any:
    def job() -> list[str]:
        if task_starts_after_s is not None:
            time.sleep(task_starts_after_s)
            cluster.task_started.set()
        if cluster.cancelled.wait(runs_s):
            raise RuntimeError("Job 0 cancelled part of cancelled job group")
        return ["probe report"]

    return job


def test_no_executor_taking_a_task_within_the_wait_cancels_the_check_and_says_how_many_registered() -> None:
    cluster = _Cluster(executors=1)
    spark = SparkTasks(_Context(cluster), executor_wait_s=1.0)
    started = time.monotonic()
    with pytest.raises(ExecutorCapacityError) as failure:
        spark._within_executor_wait(_job_that_runs(cluster, task_starts_after_s=None, runs_s=30), "snapshot")
    assert 1.0 <= time.monotonic() - started < 5
    assert cluster.cancelled.is_set()
    message = str(failure.value)
    assert message.startswith(
        "snapshot: no Spark executor took a task within 1 s (1 executor(s) had registered with the driver)"
    )
    assert "starts executors more slowly than that" in message
    assert "spark.airflow_mysql_cdc.executor_wait_s" in message and "default 300 s" in message


def test_a_check_whose_task_started_within_the_wait_runs_past_it_and_logs_the_start_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A first task may unpack spark.archives for minutes: once it runs, the wait is over."""
    cluster = _Cluster(executors=2)
    spark = SparkTasks(_Context(cluster), executor_wait_s=1.0)
    with caplog.at_level(logging.INFO, logger="airflow_mysql_cdc.spark"):
        job = _job_that_runs(cluster, task_starts_after_s=0.3, runs_s=1.8)
        assert spark._within_executor_wait(job, "snapshot") == ["probe report"]
    assert not cluster.cancelled.is_set()
    [line] = [message for message in caplog.messages if "took the first task" in message]
    assert re.fullmatch(
        r"snapshot: executors took the first task after \d s \(the wait for them is 1 s\); "
        r"2 executor\(s\) registered",
        line,
    )


def test_a_local_master_reports_no_executor_count() -> None:
    """local[...] runs tasks in the driver: there is no executor to count."""
    cluster = _Cluster()
    context = _Context(cluster)
    context.master = "local[2]"
    with pytest.raises(ExecutorCapacityError) as failure:
        SparkTasks(context, executor_wait_s=0.3)._within_executor_wait(
            _job_that_runs(cluster, task_starts_after_s=None, runs_s=30), "catch-up"
        )
    assert "registered" not in str(failure.value)


SPARK_CANNOT_RUN = (
    "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 failed "
    "4 times, most recent failure: Lost task 0.3 in stage 0.0 (TID 5) (10.0.0.7 executor 0): "
    'java.io.IOException: Cannot run program "{python}": error={errno}, {reason}\n'
    "\tat java.base/java.lang.ProcessBuilder.start(ProcessBuilder.java:1143)\n"
)
"""Spark 4.2's failure of the check's job (as PySpark raises it) when executors cannot start the
interpreter; seen on the standalone cluster with a missing and a non-executable one."""


@pytest.mark.parametrize(("errno", "reason"), [(2, "No such file or directory"), (13, "Permission denied")])
def test_an_executor_python_that_cannot_start_is_a_configuration_error_naming_host_and_interpreter(
    errno: int, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = "/nonexistent/bin/python3"

    def run(*_: Any, **__: Any) -> list[Any]:
        raise RuntimeError(SPARK_CANNOT_RUN.format(python=python, errno=errno, reason=reason))

    spark = SparkTasks(_Context(_Cluster(executors=2)), executor_wait_s=30)
    monkeypatch.setattr(spark, "run", run)
    with pytest.raises(ExecutorRequirementsError) as failure:
        spark.require(["pyarrow"], name="snapshot")
    assert str(failure.value).startswith(
        f"snapshot: the Spark executors cannot start their Python: {python} on 10.0.0.7: {reason}. "
        "Set the executors' Python (the Spark property spark.pyspark.python: executor_python in the "
        "pipeline JSON's spark object)"
    )
    assert failure.value.exit_code is ExitCode.CONFIGURATION and not failure.value.retryable


def test_another_failure_of_the_check_is_raised_as_spark_raised_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(*_: Any, **__: Any) -> list[Any]:
        raise RuntimeError("Job aborted due to stage failure: ExecutorLostFailure (executor 0 exited)")

    spark = SparkTasks(_Context(_Cluster(executors=2)), executor_wait_s=30)
    monkeypatch.setattr(spark, "run", run)
    with pytest.raises(RuntimeError, match="ExecutorLostFailure"):
        spark.require(["pyarrow"], name="snapshot")
