"""Where Spark comes in: run picklable tasks as Spark tasks, one partition each, results in order.

The engine's parallel work (snapshot windows, GTID-range readers) is a list of independent, picklable
tasks whose results the driver commits itself; Spark is the way to run them on executors. This is
the one place that talks to a ``SparkContext``: the snapshot and the catch-up both go through
:class:`SparkTasks`, so a job's description, one task per partition and the warm-up of Python
workers are the same for both.

Invariant: :meth:`SparkTasks.run` returns exactly one result per task, in the tasks' order, or raises
(a task that failed after Spark's own task retries fails the job). Tasks must therefore be safe to run
twice: both users' tasks are pure reads of the source.

pyspark is imported only when a session is created, so the engine imports without it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from airflow_mysql_cdc.engine.errors import CdcError, ConfigurationError

log = logging.getLogger("airflow_mysql_cdc.spark")


SECRET_CONF_VARIABLE = "AIRFLOW_MYSQL_CDC_SECRET_SPARK_CONF"
"""Spark properties that hold a secret (an OpenLineage transport's API key), as a JSON object in
the driver's environment: set on the context's configuration when it is created, never passed as a
``--conf`` argument, which every user of the host can read (the spark-submit hook's invariant)."""

EXECUTOR_WAIT_CONF = "spark.airflow_mysql_cdc.executor_wait_s"
DEFAULT_EXECUTOR_WAIT_S = 300.0
"""Executors of a healthy first run on the CI's loaded 2-core standalone cluster took about 70 s to
register (issue 34): the wait must stay well above the start-up the driver logs."""

LOCAL_DISK_ENCRYPTION_CONF = "spark.io.encryption.enabled"
"""Spark's local-disk encryption, which the operators turn on unless the pipeline JSON turns it off
(``driver_conf`` in ``hooks/spark_defaults.py``): the broadcast secrets' files on the
driver's and the executors' disks are then ciphertext (:mod:`.executor_secrets`)."""

_INTERPRETER_NOT_STARTED = re.compile(
    r"\((?P<host>[^\s()]+) executor [^)]*\): java\.io\.IOException: "
    r'Cannot run program "(?P<python>[^"]*)"[^:\n]*: error=\d+, (?P<reason>[^\n]*)'
)
"""Spark's failure of a task whose executor could not start the Python interpreter it was given."""


class ExecutorCapacityError(CdcError):
    """No executor took the first tasks within the wait (a retry may find capacity)."""


class ExecutorRequirementsError(ConfigurationError):
    """The executors' Python cannot be started, or lacks a module the engine's tasks import (a retry
    cannot help)."""


_CHECK_POLL_S = 0.25
"""How often the executor check looks whether an executor took one of its tasks."""

Task = TypeVar("Task")
Result = TypeVar("Result")


def secret_spark_conf(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The secret Spark properties the operator passed in :data:`SECRET_CONF_VARIABLE` (none: ``{}``)."""
    text = environ.get(SECRET_CONF_VARIABLE)
    if not text:
        return {}
    try:
        properties = json.loads(text)
    except ValueError as error:
        raise ConfigurationError(f"{SECRET_CONF_VARIABLE} is not a JSON object: {error}") from None
    if not isinstance(properties, dict):
        raise ConfigurationError(f"{SECRET_CONF_VARIABLE} is not a JSON object of Spark properties")
    return {str(key): str(value) for key, value in properties.items()}


def _no_capacity_message(name: str, wait_s: float, registered: int | None) -> str:
    """What a user reads when no executor took the check's tasks within the wait."""
    how_many = "" if registered is None else f" ({registered} executor(s) had registered with the driver)"
    return (
        f"{name}: no Spark executor took a task within {wait_s:.0f} s{how_many}: the cluster has no "
        "free executor slot, or none with the memory and cores asked for (spark.executor.memory and "
        "spark.executor.cores: executor_memory and executor_cores in the pipeline JSON's spark "
        "object), or it starts executors more slowly than that (a healthy run's task log says how long "
        "they took: 'executors took the first task after N s'). Free capacity or ask for less; a retry "
        f"tries again. The wait is the Spark property {EXECUTOR_WAIT_CONF} (in the conf of the pipeline "
        f"JSON's spark object; default {DEFAULT_EXECUTOR_WAIT_S:.0f} s): keep it at least three times "
        "the start-up and 120 s or more (docs/deployment.md, 'A cluster without capacity')."
    )


class SparkTasks:
    """A Spark context, with the one way this engine runs tasks on it."""

    def __init__(self, context: Any, *, executor_wait_s: float | None = None) -> None:
        """``executor_wait_s``: how long :meth:`require` waits for executors (default: the Spark
        property :data:`EXECUTOR_WAIT_CONF`, else :data:`DEFAULT_EXECUTOR_WAIT_S`)."""
        self.context = context
        self.executor_wait_s = executor_wait_s

    @classmethod
    def session(cls, app_name: str) -> SparkTasks:
        """The application's Spark context (``getOrCreate``: spark-submit's, or a local one).

        A bare ``SparkContext``, not a ``SparkSession``: the engine runs RDD tasks only, and the SQL
        session's start-up cost each application about 3 s more (Spark 4.2, local[2]).
        """
        from pyspark import SparkConf, SparkContext

        spark_conf = SparkConf().setAppName(app_name).setAll(list(secret_spark_conf().items()))
        context = SparkContext.getOrCreate(spark_conf)
        context.setLogLevel("WARN")
        return cls(context)

    @property
    def parallelism(self) -> int:
        """How many tasks the cluster runs at once (Spark's ``defaultParallelism``), at least 1."""
        return max(1, self.context.defaultParallelism)

    def run(
        self, function: Callable[[Task], Result], tasks: Sequence[Task], *, description: str | None = None
    ) -> list[Result]:
        """``[function(task) for task in tasks]``, each call a Spark task of one job."""
        if description is not None:
            self.context.setJobDescription(description)
        return self.context.parallelize(list(tasks), numSlices=len(tasks)).map(function).collect()

    def require(self, modules: Sequence[str], *, name: str) -> None:
        """Raise :class:`ExecutorRequirementsError` unless every Python worker can import ``modules``.

        One probe per slot, shipped by value (:mod:`.executor_probe`), so it runs where the engine
        itself is missing. Costs one small job per application.
        """
        from pyspark import cloudpickle

        from airflow_mysql_cdc.engine.runtime import executor_probe

        cloudpickle.register_pickle_by_value(executor_probe)
        try:
            reports = self._within_executor_wait(
                lambda: self.run(
                    executor_probe.probe,
                    [tuple(modules)] * self.parallelism,
                    description=f"{name}: check the executors' Python modules",
                ),
                name,
            )
        except Exception as error:
            not_started = _INTERPRETER_NOT_STARTED.search(str(error))
            if not_started is None:
                raise
            host, python, reason = not_started.group("host", "python", "reason")
            raise ExecutorRequirementsError(
                f"{name}: the Spark executors cannot start their Python: {python} on {host}: {reason}. "
                "Set the executors' Python (the Spark property spark.pyspark.python: executor_python in "
                "the pipeline JSON's spark object) to an executable interpreter that exists at that path "
                "on every executor host, with the executor requirements installed (docs/deployment.md), "
                "or ship one with spark.archives."
            ) from None
        lacking = sorted(
            {(r["host"], r["python"], r["version"], tuple(r["missing"])) for r in reports if r["missing"]}
        )
        if lacking:
            where = "; ".join(
                f"{python} (Python {version}) on {host} lacks {', '.join(missing)}"
                for host, python, version, missing in lacking
            )
            raise ExecutorRequirementsError(
                f"{name}: the Spark executors cannot run the engine: {where}. Install the executor "
                "requirements (pyarrow, PyMySQL, mysql-replication, zstandard; docs/deployment.md) into "
                "the executors' Python (spark.pyspark.python), or ship a virtualenv with spark.archives; "
                "the engine itself is shipped by the operators with --py-files."
            )

    def _within_executor_wait(self, job: Callable[[], list[Result]], name: str) -> list[Result]:
        """``job()``, unless no executor takes one of its tasks within the wait (the cluster is full,
        has no executor with the memory and cores asked for, or starts executors more slowly than
        the wait): then the job is cancelled and :class:`ExecutorCapacityError` raised instead of
        Spark's endless "Initial job has not accepted any resources". Once a task has started, the
        job runs to its end without a limit (a first task may unpack ``spark.archives``). The wait
        is the Spark property :data:`EXECUTOR_WAIT_CONF` (seconds); it includes the executors'
        start-up, which the log line of a healthy check reports, so a user can size the wait."""
        wait_s = self.executor_wait_s
        if wait_s is None:
            wait_s = float(self.context.getConf().get(EXECUTOR_WAIT_CONF, str(DEFAULT_EXECUTOR_WAIT_S)))
        group = f"airflow-mysql-cdc-check-{id(self)}"
        outcome: list[Any] = []

        def run() -> None:
            self.context.setJobGroup(group, f"{name}: check the executors", interruptOnCancel=True)
            try:
                outcome.append(job())
            except BaseException as error:  # noqa: BLE001 - handed to the waiting thread
                outcome.append(error)

        started = time.monotonic()
        thread = threading.Thread(target=run, name=f"{name}-executor-check", daemon=True)
        thread.start()
        taken_after_s: float | None = None
        while thread.is_alive():
            if taken_after_s is None and self._a_task_started(group):
                taken_after_s = time.monotonic() - started
            remaining_s = started + wait_s - time.monotonic()
            if taken_after_s is None and remaining_s <= 0:
                registered = self._executors_registered()
                self.context.cancelJobGroup(group)
                raise ExecutorCapacityError(_no_capacity_message(name, wait_s, registered))
            thread.join(_CHECK_POLL_S if taken_after_s is not None else min(_CHECK_POLL_S, remaining_s))
        registered = self._executors_registered()
        log.info(
            "%s: executors took the first task after %.0f s (the wait for them is %.0f s)%s",
            name,
            time.monotonic() - started if taken_after_s is None else taken_after_s,
            wait_s,
            "" if registered is None else f"; {registered} executor(s) registered",
        )
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    def _a_task_started(self, group: str) -> bool:
        """Whether a task of the job group started (an executor took it), whatever its end."""
        tracker = self.context.statusTracker()  # PySpark's public view of jobs and stages
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job is not None else ():
                stage = tracker.getStageInfo(stage_id)
                if (
                    stage is not None
                    and stage.numActiveTasks + stage.numCompletedTasks + stage.numFailedTasks
                ):
                    return True
        return False

    def _executors_registered(self) -> int | None:
        """How many executors have registered with the driver (None for a ``local[...]`` master,
        whose only executor is the driver). PySpark has no call for it: the JVM's status tracker,
        whose list includes the driver, through PySpark's private ``_jsc`` (guarded on the pinned
        PySpark by the first test of ``tests/integration/test_spark_standalone.py``)."""
        if str(self.context.master).startswith("local"):
            return None
        try:
            return max(0, len(self.context._jsc.sc().statusTracker().getExecutorInfos()) - 1)
        except Exception:  # noqa: BLE001 - only a detail of a message
            return None

    def warm_up(self, function: Callable[[int], Any], *, name: str) -> None:
        """Start every Python worker now, in the background, by running ``function`` once per slot.

        A cold worker spends 1-2 s importing the engine and pyarrow in its first task; warming them
        while the driver does its own setup takes that off the first wave. A failure here is only a
        lost head start: the real tasks report real failures.
        """
        slots = self.parallelism

        def warm() -> None:
            try:
                self.run(function, range(slots), description=f"{name}: warm up Python workers")
            except Exception as error:  # noqa: BLE001 - see the docstring
                log.info("%s: warming up the Python workers failed (%s); they start cold", name, error)

        threading.Thread(target=warm, name=f"{name}-warm-up", daemon=True).start()
