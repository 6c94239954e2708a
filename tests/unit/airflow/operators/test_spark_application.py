"""SparkApplicationOperator: the application's exit code decides whether a retry can help."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.hooks.spark_submit import SparkSubmitFailed
from airflow_mysql_cdc.operators.attempt_marker import AttemptMarker
from airflow_mysql_cdc.operators.attempt_recovery import OwnAttempt, work_root
from airflow_mysql_cdc.operators.spark_application import ApplicationSecrets, SparkApplicationOperator
from tests.support.spark_submit import SparkSubmitRecorder

ENDPOINT = MySqlEndpoint(host="127.0.0.1", user="cdc", password="Exit-Code-Secret-5")


@pytest.fixture
def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SparkSubmitRecorder:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    return SparkSubmitRecorder(tmp_path, monkeypatch)


def _run(operator: SparkApplicationOperator) -> dict:
    return operator.run_application(
        "app.py",
        name="exit codes",
        config_json="{}",
        secrets=ApplicationSecrets.of(ENDPOINT, {}),
    )


def test_a_final_exit_code_fails_the_task_for_good(recorder: SparkSubmitRecorder) -> None:
    recorder.behave(result={}, exit_code=ExitCode.CONFIGURATION)
    operator = SparkApplicationOperator(task_id="app", spark_conn_id="spark_local")
    with pytest.raises(AirflowFailException, match="app failed: configuration error. Cannot execute"):
        _run(operator)


STATEMENT_ERROR = (
    "airflow-mysql-cdc ERROR binlog: StatementBasedChangeError: statement-logged change of tracked "
    "table(s) shop.orders in transaction 3e11fa47-71ca-11e1-9e33-c80aa9429562:7: 'UPDATE orders SET x = 1'"
)


@pytest.mark.parametrize(
    "error_line",
    [
        STATEMENT_ERROR,
        "airflow-mysql-cdc ERROR binlog: BinlogPurgedError: the MySQL server has purged binary logs this "
        "reader still needs: transactions 3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5 are gone",
        "airflow-mysql-cdc ERROR binlog: BinlogPositionRejectedError: the MySQL server refused to stream "
        "the binlog from 3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9 (error 1236)",
    ],
)
def test_the_failure_reason_starts_with_the_applications_own_error_line(
    recorder: SparkSubmitRecorder, error_line: str
) -> None:
    recorder.behave(result={}, exit_code=ExitCode.BINLOG, stderr_lines=("some log line", error_line, "more"))
    operator = SparkApplicationOperator(task_id="app", spark_conn_id="spark_local")
    with pytest.raises(AirflowFailException) as failure:
        _run(operator)
    text = str(failure.value)
    assert text.startswith(error_line + "\n")
    assert "app failed: the binlog cannot be applied from the checkpoint" in text  # the code's meaning after


def test_a_retryable_failure_starts_with_the_error_line_too_and_masks_secrets(
    recorder: SparkSubmitRecorder,
) -> None:
    line = f"airflow-mysql-cdc ERROR failed: OperationalError: cannot log in with {ENDPOINT.password}"
    recorder.behave(result={}, exit_code=1, stderr_lines=(line,))
    operator = SparkApplicationOperator(task_id="app", spark_conn_id="spark_local")
    with pytest.raises(SparkSubmitFailed) as failure:
        _run(operator)
    assert str(failure.value).startswith(
        "airflow-mysql-cdc ERROR failed: OperationalError: cannot log in with ***"
    )
    assert ENDPOINT.password not in str(failure.value).splitlines()[0]


def test_another_exit_code_fails_the_attempt_and_leaves_retries_to_airflow(
    recorder: SparkSubmitRecorder,
) -> None:
    recorder.behave(result={}, exit_code=1)
    operator = SparkApplicationOperator(task_id="app", spark_conn_id="spark_local")
    with pytest.raises(SparkSubmitFailed, match="Error code is: 1") as failure:
        _run(operator)
    assert not isinstance(failure.value, AirflowFailException)
    assert failure.value.returncode == 1
    assert operator._hook is not None and operator._hook.returncode == 1


def test_the_result_file_is_the_return_value(recorder: SparkSubmitRecorder) -> None:
    recorder.behave(result={"answer": 42})
    operator = SparkApplicationOperator(task_id="app", spark_conn_id="spark_local")
    assert _run(operator) == {"answer": 42}
    assert operator._hook is not None and operator._hook.returncode == 0


def test_the_application_runs_in_a_work_dir_whose_marker_names_spark_submit_and_which_is_gone_after(
    recorder: SparkSubmitRecorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    markers: list[AttemptMarker] = []
    naming = OwnAttempt.started

    def started(own: OwnAttempt, pid: int) -> None:
        naming(own, pid)
        markers.append(AttemptMarker.from_json((own.work_dir / "attempt.json").read_text()))

    monkeypatch.setattr(OwnAttempt, "started", started)
    operator = SparkApplicationOperator(task_id="app", spark_conn_id="spark_local")
    _run(operator)
    [marker] = markers
    assert operator._hook is not None and marker.application is not None
    assert marker.application.pid == operator._hook.pid and marker.task_process.pid == os.getpid()
    argv = recorder.calls()[-1].argv
    work_dir = Path(argv[argv.index("--config") + 1]).parent
    assert work_dir.parent == work_root("exit_codes") and str(work_dir) == marker.work_dir
    assert not work_dir.exists()
