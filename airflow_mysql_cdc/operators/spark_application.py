"""Shared machinery of the operators that run one of our applications under spark-submit."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow.sdk import BaseOperator, BaseOperatorLink, get_current_context
from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.lake.storage import secret_storage_options_to_environment
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.hooks.attempt_marker import RESULT_FILE
from airflow_mysql_cdc.hooks.attempt_recovery import (
    ON_KILL_GRACE_S,
    ON_KILL_REAP_S,
    ApplicationAttempts,
    OwnAttempt,
)
from airflow_mysql_cdc.hooks.next_steps import with_next_step
from airflow_mysql_cdc.hooks.spark_defaults import driver_conf, driver_environment
from airflow_mysql_cdc.hooks.spark_submit import MySqlCdcSparkSubmitHook, SparkSubmitFailed
from airflow_mysql_cdc.operators.links import (
    MySqlCdcLakeLocationLink,
    MySqlCdcSparkUiLink,
    publish_spark_ui_link,
    with_free_ui_port,
)
from airflow_mysql_cdc.operators.spark_openlineage import SplitConf, inject_openlineage, injection_defaults


@dataclass(frozen=True)
class ApplicationSecrets:
    """What an application needs that may never reach argv, a file, XCom or a log line."""

    environment: dict[str, str]
    """Variables for the driver's environment: the endpoint, the lake's secret storage options."""
    values: tuple[str, ...]
    """The secrets inside those variables (a password inside a JSON value), refused in argv."""

    @classmethod
    def of(cls, endpoint: MySqlEndpoint, secret_storage_options: Mapping[str, str]) -> ApplicationSecrets:
        return cls(
            environment={
                **endpoint.to_environment(),
                **secret_storage_options_to_environment(dict(secret_storage_options)),
            },
            values=tuple(value for value in (endpoint.password, *secret_storage_options.values()) if value),
        )


class SparkApplicationOperator(BaseOperator):
    """Writes a config file, runs an application under spark-submit, returns its result file.

    Secrets (the MySQL endpoint with its password) go to the application in the spark-submit
    process environment through :class:`MySqlCdcSparkSubmitHook`, which runs client mode only and
    refuses a command line holding a secret; argv and the config file hold nothing secret.
    spark-submit runs in its own process group, which is killed as a whole on ``on_kill``, on a
    task timeout and on any failure. Its work dir (config and result files) lies under a known
    per-application root with a marker naming the attempt and the process group: when the task
    process dies without any of that running (``kill -9``), the next attempt adopts or stops the
    application and removes the dir (:mod:`.attempt_marker`, :mod:`.attempt_recovery`).

    :param openlineage_inject_parent_job_info: add the OpenLineage parent job (this task) to the
        Spark properties, as the Spark provider's ``SparkSubmitOperator`` does; default
        ``[openlineage] spark_inject_parent_job_info``.
    :param openlineage_inject_transport_info: add this Airflow's OpenLineage transport to the Spark
        properties; its API key and headers reach the driver in its environment, never argv
        (:mod:`.spark_openlineage`). Default ``[openlineage] spark_inject_transport_info``.

    Extra links: Spark's web UI while the application runs, when the pipeline turned it on, and the
    lake location of the task's tables (:mod:`.links`).
    """

    operator_extra_links: tuple[BaseOperatorLink, ...] = (MySqlCdcSparkUiLink(), MySqlCdcLakeLocationLink())

    def __init__(
        self,
        *,
        spark_conn_id: str = "spark_default",
        spark_conf: dict[str, Any] | None = None,
        py_files: str | None = None,
        files: str | None = None,
        archives: str | None = None,
        openlineage_inject_parent_job_info: bool | None = None,
        openlineage_inject_transport_info: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        parent_job_default, transport_default = injection_defaults()
        if openlineage_inject_parent_job_info is None:
            openlineage_inject_parent_job_info = parent_job_default
        if openlineage_inject_transport_info is None:
            openlineage_inject_transport_info = transport_default
        self.openlineage_inject_parent_job_info = openlineage_inject_parent_job_info
        self.openlineage_inject_transport_info = openlineage_inject_transport_info
        self.spark_conn_id = spark_conn_id
        self.spark_conf = spark_conf
        self.py_files = py_files
        self.files = files
        self.archives = archives
        self._hook: MySqlCdcSparkSubmitHook | None = None
        self._attempt: OwnAttempt | None = None
        self._attempts: ApplicationAttempts | None = None

    def run_application(
        self,
        application: str,
        *,
        name: str,
        config_json: str,
        secrets: ApplicationSecrets,
        extra_args: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """Run ``application`` and return its result file; ``secrets`` reach its driver's environment only."""
        safe_name = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        self.spark_conf = with_free_ui_port(self.spark_conf)
        publish_spark_ui_link(self)
        attempts = self._attempts = ApplicationAttempts(safe_name, self.log)
        adopted = attempts.recover(config_json)
        if adopted is not None:
            return adopted
        with attempts.own(config_json) as own:
            self._attempt = own
            config_file = own.work_dir / "config.json"
            result_file = own.work_dir / RESULT_FILE
            config_file.write_text(config_json)
            spark_conf = self._spark_conf()
            self._hook = MySqlCdcSparkSubmitHook(
                conn_id=self.spark_conn_id,
                name=safe_name,
                conf=driver_conf(spark_conf.public),
                py_files=self.py_files,
                files=self.files,
                archives=self.archives,
                application_args=[
                    "--config",
                    str(config_file),
                    "--result-file",
                    str(result_file),
                    *extra_args,
                ],
                environment=driver_environment(),
                secret_environment={**secrets.environment, **spark_conf.environment()},
                secret_values=(*secrets.values, *spark_conf.secret.values()),
                on_started=own.started,
            )
            try:
                self._hook.submit(application)
            except SparkSubmitFailed as error:
                raise self._failure(error) from error
            finally:
                self._hook.kill_process_group()
            return json.loads(result_file.read_text())

    @property
    def adopted_from(self) -> str | None:
        """The earlier try whose application's result the last :meth:`run_application` returned
        (it outlived that try's task process: docs/operations.md); None when this try ran its own."""
        return self._attempts.adopted_from if self._attempts is not None else None

    def _spark_conf(self) -> SplitConf:
        """``spark_conf`` with the OpenLineage parent job and transport when asked for
        (:mod:`.spark_openlineage`), its secret properties apart: they reach the driver's environment."""
        inject = self.openlineage_inject_parent_job_info or self.openlineage_inject_transport_info
        return inject_openlineage(
            self.spark_conf or {},
            get_current_context() if inject else None,
            parent_job=self.openlineage_inject_parent_job_info,
            transport=self.openlineage_inject_transport_info,
        )

    def _failure(self, error: SparkSubmitFailed) -> Exception:
        """Fail at once when the application's exit code says no retry can help; else let Airflow retry.

        The code is the one the engine's error class carries (:class:`ExitCode`); a code we do not
        know (a signal, the JVM's own) is treated as a crash, which a retry may fix. Either way the
        exception's message starts with the application's own error line when it printed one
        (``airflow-mysql-cdc ERROR binlog: StatementBasedChangeError: ...``), so the reason, not the
        exit code's generic meaning, is what the UI shows. It never holds the spark-submit command line
        (the task log does: :class:`SparkSubmitFailed`). A next step the error names (re-snapshot these
        tables) is followed by how to take it in Airflow (:mod:`airflow_mysql_cdc.hooks.next_steps`).
        """
        code = error.returncode
        known = code in ExitCode.__members__.values()
        if known and not ExitCode(code).retryable:
            generic = f"{self.task_id} failed: {ExitCode(code).meaning} (exit code {code})"
            if error.application_error:  # the application's own line first: what the UI shows
                reason = with_next_step(error.application_error, error.next_step)
                return AirflowFailException(f"{reason}\n{generic}")
            return AirflowFailException(f"{generic}.{error.output_tail}")
        return error

    def on_kill(self) -> None:
        """Stop the application and remove this attempt's work dir before Airflow SIGKILLs the task
        process, 5 s after the SIGTERM that runs this ("mark failed" in the UI): SIGTERM, SIGKILL
        after :data:`.ON_KILL_GRACE_S`, then the dir. Guarded by
        tests/unit/airflow/operators/test_spark_application_on_kill.py and
        tests/integration/test_binlog_apply_operator.py (a real spark-submit)."""
        if self._attempts is not None:
            self._attempts.stop_adopted(grace_s=ON_KILL_GRACE_S, reap_s=ON_KILL_REAP_S)
        if self._attempt is not None:
            self._attempt.stopping()
        if self._hook is not None:
            self._hook.kill_process_group(grace_s=ON_KILL_GRACE_S, reap_s=ON_KILL_REAP_S)
        if self._attempt is not None:
            self._attempt.remove()
