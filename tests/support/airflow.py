"""Run real DAGs with ``dag.test()`` and read what they left in the Airflow database.

Airflow 3 serialises a DAG from its bundle before ``dag.test()`` runs it, so test DAGs live as
files in ``tests/dags`` (the dags folder the test conftest configures) and take their inputs from
``run_conf`` params.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.mysql import REPO_ROOT

TEST_DAGS_DIR = REPO_ROOT / "tests" / "dags"


class _CurrentStdout:
    """A stream that writes to whatever ``sys.stdout`` is at the moment of writing."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


def airflow_logs_follow_the_current_stdout() -> None:
    """Configures Airflow's logging now and makes its root handler write to the current ``sys.stdout``.

    Importing Airflow configures logging once, binding the root handler to the ``sys.stdout`` of that
    moment. When the first import happens while collecting tests, that is pytest's global capture
    stream, so stdlib loggers' lines (ours, and dag.test's ``[DAG TEST]`` markers) would miss a test's
    ``capfd`` (and, after the run, write to a closed file)."""
    import airflow  # noqa: F401  (configures logging)

    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler and handler.stream in (sys.stdout, sys.__stdout__):
            handler.setStream(_CurrentStdout())  # type: ignore[arg-type]


def migrate_airflow_db() -> None:
    airflow = Path(sys.executable).with_name("airflow")
    result = subprocess.run([str(airflow), "db", "migrate"], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"airflow db migrate failed:\n{result.stderr[-3000:]}")


def load_dag(file_name: str, dag_id: str):
    path = TEST_DAGS_DIR / file_name
    spec = importlib.util.spec_from_file_location(f"test_dag_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    dags = [value for value in vars(module).values() if type(value).__name__ == "DAG"]
    return next((dag for dag in dags if dag.dag_id == dag_id), None)


def run_dag(file_name: str, dag_id: str, conf: dict[str, Any] | None = None, *, logical_date=None):
    """``dag.test()`` of a test DAG; returns the finished DagRun (tasks run in this process).

    Running a logical date again clears its task instances first, as a clear in the UI does.
    """
    dag = load_dag(file_name, dag_id)
    assert dag is not None, f"{file_name} does not define {dag_id}"
    if logical_date is None:
        return dag.test(run_conf=conf)
    return dag.test(run_conf=conf, logical_date=logical_date)


def task_states(dag_run) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in dag_run.get_task_instances()}


def xcom_value(dag_run, task_id: str, key: str = "return_value") -> Any:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        query = XComModel.get_many(run_id=dag_run.run_id, key=key, task_ids=task_id, dag_ids=dag_run.dag_id)
        row = session.execute(query).scalars().first()
        if row is None:
            return None
        value = XComModel.deserialize_value(row)
    return json.loads(value) if isinstance(value, str) and value[:1] in ("{", "[") else value


def connection_env(endpoint, *, conn_type: str = "mysql_cdc", server_id: int | None = None) -> str:
    """An ``AIRFLOW_CONN_*`` value for a test server endpoint."""
    extra = {"server_id": server_id} if server_id else {}
    return json.dumps(
        {
            "conn_type": conn_type,
            "host": endpoint.host,
            "port": endpoint.port,
            "login": endpoint.user,
            "password": endpoint.password,
            "extra": extra,
        }
    )


_LOG_LINE = re.compile(r"^\S+ \[(\w+)\s*\] (.*) \[([\w.]+)\]( |$)")


@dataclass(frozen=True)
class TaskLogLine:
    level: str
    message: str
    logger: str


def task_log(output: str, task_id: str) -> list[TaskLogLine]:
    """The lines ``task_id`` logged in ``dag.test``'s output (the last run of it there), without
    Airflow's own lines around them (task started, XCom pushed, state updated): what the package and
    the applications it runs wrote to the task's log."""
    block = output.rsplit(f"[DAG TEST] starting task_id={task_id} ", 1)[-1]
    block = block.split(f"[DAG TEST] end task task_id={task_id} ", 1)[0]
    lines = [_LOG_LINE.match(line) for line in block.splitlines()]
    return [
        TaskLogLine(match.group(1), match.group(2).rstrip(), match.group(3))
        for match in lines
        if match and "airflow_mysql_cdc" in match.group(3)
    ]
