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

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from airflow_mysql_cdc.engine.errors import ConfigurationError

log = logging.getLogger("airflow_mysql_cdc.spark")


class ExecutorRequirementsError(ConfigurationError):
    """The executors' Python lacks a module the engine's tasks import (a retry cannot help)."""


Task = TypeVar("Task")
Result = TypeVar("Result")


class SparkTasks:
    """A Spark context, with the one way this engine runs tasks on it."""

    def __init__(self, context: Any) -> None:
        self.context = context

    @classmethod
    def session(cls, app_name: str) -> SparkTasks:
        """The application's Spark session (``getOrCreate``: spark-submit's, or a local one)."""
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.appName(app_name).getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
        return cls(spark.sparkContext)

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
        reports = self.run(
            executor_probe.probe,
            [tuple(modules)] * self.parallelism,
            description=f"{name}: check the executors' Python modules",
        )
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
