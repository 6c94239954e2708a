"""Shared machinery of the operators that run one of our applications under spark-submit."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_mysql_cdc.engine.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.entrypoints import common

# Exit codes of the applications that no retry can fix (see the entry points' docstrings).
FINAL_EXIT_CODES = {
    common.EXIT_CONFIG: "configuration error",
    common.EXIT_SINK_MISMATCH: "the lake and the requested start disagree, or a table cannot join",
    common.EXIT_BINLOG: "the binlog cannot be read from the checkpoint",
}


def kill_process_group(process: subprocess.Popen, *, grace_s: float = 10.0) -> None:
    """SIGTERM the whole group started for spark-submit (JVM and Python driver), SIGKILL stragglers.

    The Spark provider's ``on_kill`` kills only the spark-submit JVM; in local and client mode the
    Python driver is the JVM's child and would go on writing until it next writes to its closed
    output pipe. We start spark-submit in a new session, so its process group holds the driver
    too. SIGTERM first lets the driver commit its pending batch and exit cleanly.
    """
    group = process.pid  # start_new_session: the group id is spark-submit's pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            process.poll()  # reap spark-submit itself, or it stays in the group as a zombie
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


class SparkApplicationOperator(BaseOperator):
    """Writes a config file, runs an application under spark-submit, returns its result file.

    The MySQL endpoint (with its password) goes to the application in the environment; argv and
    the config file hold nothing secret. spark-submit runs in its own process group, which is
    killed as a whole on ``on_kill``, on a task timeout and on any failure.
    """

    def __init__(
        self,
        *,
        spark_conn_id: str = "spark_default",
        spark_conf: dict[str, Any] | None = None,
        py_files: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.spark_conn_id = spark_conn_id
        self.spark_conf = spark_conf
        self.py_files = py_files
        self._hook: SparkSubmitHook | None = None

    def run_application(
        self,
        application: str,
        *,
        name: str,
        endpoint: MySqlEndpoint,
        config_json: str,
        extra_args: tuple[str, ...] = (),
        lake_secret_environment: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        environment = {
            **endpoint.to_environment(),
            # The lake's credentials (secret storage options), like the endpoint: environment only.
            **(lake_secret_environment or {}),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PYTHONUNBUFFERED": "1",
            # spark-submit is found next to this interpreter when it was pip-installed with pyspark.
            "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        }
        safe_name = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        with tempfile.TemporaryDirectory(prefix=f"{safe_name}-") as workdir:
            config_file = Path(workdir) / "config.json"
            result_file = Path(workdir) / "result.json"
            config_file.write_text(config_json)
            self._hook = SparkSubmitHook(
                conn_id=self.spark_conn_id,
                name=safe_name,
                conf=self.spark_conf,
                py_files=self.py_files,
                application_args=[
                    "--config",
                    str(config_file),
                    "--result-file",
                    str(result_file),
                    *extra_args,
                ],
                env_vars=environment,
            )
            try:
                self._hook.submit(application, start_new_session=True)
            except AirflowException as error:
                raise self._failure(error) from error
            finally:
                self._kill_tree()
            return json.loads(result_file.read_text())

    def _failure(self, error: AirflowException) -> Exception:
        code = self._hook._submit_sp.returncode if self._hook and self._hook._submit_sp else None
        if code in FINAL_EXIT_CODES:
            return AirflowFailException(f"{self.task_id} failed: {FINAL_EXIT_CODES[code]}. {error}")
        return error

    def _kill_tree(self) -> None:
        process = self._hook._submit_sp if self._hook else None
        if process is None:
            return
        if process.poll() is None:
            self.log.warning("Stopping spark-submit (pid %d) and its children", process.pid)
        kill_process_group(process)

    def on_kill(self) -> None:
        self._kill_tree()
