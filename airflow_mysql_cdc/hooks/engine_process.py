"""An engine application run as a plain Python process, owned by the task that started it.

The application (maintenance, verification: no Spark) runs in a process of its own, in its own
process group: its output becomes task log lines, each at its level (a WARNING line is a warning:
:class:`~airflow_mysql_cdc.hooks.spark_output.OutputLevels`), a killed or timed-out task kills it whole, and
its exit code, the engine's :class:`~airflow_mysql_cdc.engine.errors.ExitCode`, decides whether the
task fails at once or Airflow retries it. Its work dir has a marker naming the attempt, so the next
attempt adopts or stops it when the task process died without stopping it
(:mod:`.attempt_recovery`). Secrets reach it in its environment only; Airflow's own connection and
variable secrets in the worker's environment are not passed on.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from typing import Any

from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_mysql_cdc.engine.errors import ExitCode, NextStep
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.hooks.attempt_marker import RESULT_FILE
from airflow_mysql_cdc.hooks.attempt_recovery import (
    ON_KILL_GRACE_S,
    ON_KILL_REAP_S,
    ApplicationAttempts,
    OwnAttempt,
)
from airflow_mysql_cdc.hooks.next_steps import with_next_step
from airflow_mysql_cdc.hooks.spark_output import OutputLevels

_INHERITED_PREFIXES_REFUSED = ("AIRFLOW_CONN_", "AIRFLOW_VAR_")


class EngineProcess:
    """One engine application run as a process of its own, its output in ``log`` (a task's logger).

    Used by :class:`~airflow_mysql_cdc.operators.engine_process.EngineProcessOperator` and by
    operators that run such an application as one step of their work (the replicate task's re-load
    of some rows). Like ``SparkSubmitHook`` for spark-submit, it owns the process: its group, its
    output, its exit code, its stop (:meth:`kill`) and its work dir (:mod:`.attempt_recovery`).
    """

    def __init__(self, log: Any, task_id: str) -> None:
        self.log = log
        self.task_id = task_id
        self._process: subprocess.Popen[str] | None = None
        self._attempt: OwnAttempt | None = None
        self._attempts: ApplicationAttempts | None = None

    def run(self, module: str, config: JsonObject, secret_environment: dict[str, str]) -> JsonObject:
        """``python -m <module> --config C --result-file R``; returns the result file, or raises the
        failure its exit code means."""
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{module.rpartition('.')[2]}-{config.get('pipeline_id', '')}")
        attempts = self._attempts = ApplicationAttempts(name, self.log)
        config_json = json.dumps(config, indent=2)
        adopted = attempts.recover(config_json)
        if adopted is not None:
            return adopted
        with attempts.own(config_json) as own:
            self._attempt = own
            config_file, result_file = own.work_dir / "config.json", own.work_dir / RESULT_FILE
            config_file.write_text(config_json)
            argv = [
                sys.executable,
                "-m",
                module,
                "--config",
                str(config_file),
                "--result-file",
                str(result_file),
            ]
            environment = {
                key: value
                for key, value in os.environ.items()
                if not key.startswith(_INHERITED_PREFIXES_REFUSED)
            }
            environment |= {"PYTHONUNBUFFERED": "1", **secret_environment}
            self._process = subprocess.Popen(
                argv, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                start_new_session=True,
            )  # fmt: skip
            try:
                own.started(self._process.pid)
                assert self._process.stdout is not None
                levels = OutputLevels()  # the engine's WARNING lines are warnings in the task log
                next_step = None
                for line in self._process.stdout:
                    self.log.log(levels.level_of(line.rstrip()), "%s", line.rstrip())
                    next_step = NextStep.in_line(line) or next_step
                code = self._process.wait()
            finally:
                self.kill()
            if code != 0:
                raise self.failure(code, next_step)
            return json.loads(result_file.read_text())

    def failure(self, code: int, next_step: NextStep | None = None) -> Exception:
        """The exception exit code ``code`` means, with how to take the error's next step in Airflow."""
        known = code in ExitCode.__members__.values()
        if known and not ExitCode(code).retryable:
            return AirflowFailException(
                with_next_step(
                    f"{self.task_id} failed: {ExitCode(code).meaning} (exit code {code}).", next_step
                )
            )
        meaning = ExitCode(code).meaning if known else "killed or crashed"
        return AirflowException(f"{self.task_id} failed: {meaning} (exit code {code}); a retry may help")

    def kill(self) -> None:
        """Stop the application at once (SIGKILL: these hold no pending batch) and an adopted one
        within Airflow's window for ``on_kill`` (:data:`.ON_KILL_GRACE_S`); the work dir goes when
        ``run`` unwinds, at once after this returns."""
        if self._attempts is not None:
            self._attempts.stop_adopted(grace_s=ON_KILL_GRACE_S, reap_s=ON_KILL_REAP_S)
        process = self._process
        if process is not None and process.poll() is None:
            if self._attempt is not None:
                self._attempt.stopping()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
