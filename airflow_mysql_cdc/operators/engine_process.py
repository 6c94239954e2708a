"""The operators that run an engine application as a plain Python process (maintenance, verify).

The process is the hook's (:class:`~airflow_mysql_cdc.hooks.engine_process.EngineProcess`: its
group, output, exit code and work dir); the operator only starts it with its configuration and
stops it when Airflow stops the task (``on_kill``).
"""

from __future__ import annotations

from airflow.sdk import BaseOperator

from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.hooks.engine_process import EngineProcess


class EngineProcessOperator(BaseOperator):
    """Runs ``python -m <module> --config C --result-file R`` and returns the result file."""

    _engine: EngineProcess | None = None

    def run_engine_process(
        self, module: str, config: JsonObject, secret_environment: dict[str, str]
    ) -> JsonObject:
        self._engine = EngineProcess(self.log, self.task_id)
        return self._engine.run(module, config, secret_environment)

    def on_kill(self) -> None:
        if self._engine is not None:
            self._engine.kill()
