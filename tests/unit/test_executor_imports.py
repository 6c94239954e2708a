"""Spark executors run the engine without deltalake, Spark's Python API beyond the worker, or Airflow:
what a task needs loads without them (issue 24: executors need only the executor requirements)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROGRAM = """
import importlib, sys
importlib.import_module({module!r})
print(sorted(name for name in ("deltalake", "airflow", "pyspark") if name in sys.modules))
"""


@pytest.mark.parametrize(
    "module",
    [
        "airflow_mysql_cdc.engine.snapshot.window_task",  # a snapshot window
        "airflow_mysql_cdc.engine.apply.range_reader",  # a parallel catch-up's GTID range
    ],
)
def test_what_an_executor_imports_loads_no_delta_writer_spark_or_airflow(module: str) -> None:
    output = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(module=module)], capture_output=True, text=True, check=True
    )
    assert output.stdout.split()[-1] == "[]", output.stdout
