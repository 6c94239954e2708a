"""What a Spark executor's Python can import, asked before any real task runs there.

Invariant: :func:`probe` imports only the standard library and is shipped *by value* (see
:meth:`~.spark_tasks.SparkTasks.require`), so it runs on an executor that lacks every module it
asks about, the engine included: a missing requirement is reported once, by name and host, instead
of failing every task of the first job with the same ``ModuleNotFoundError`` (which Spark retries).
"""

from __future__ import annotations

import importlib.util
import platform
import socket
import sys

from airflow_mysql_cdc.engine.values.json_values import JsonObject

EXECUTOR_REQUIREMENTS: tuple[str, ...] = (
    "airflow_mysql_cdc",
    "pyarrow",
    "pymysql",
    "pymysqlreplication",
    "zstandard",
)
"""The modules an executor imports (docs/deployment.md): the engine (shipped by the operators),
pyarrow, PyMySQL, mysql-replication and zstandard; never Airflow or deltalake (the driver writes)."""


def probe(modules: tuple[str, ...]) -> JsonObject:
    """This Python's host, interpreter and the ``modules`` it cannot import."""
    missing = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(module)
    return {
        "host": socket.gethostname(),
        "python": sys.executable,
        "version": platform.python_version(),
        "missing": missing,
    }
