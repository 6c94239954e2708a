"""SparkApplicationOperator: the application's exit code decides whether a retry can help."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.errors import ExitCode, NextStep
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.hooks.attempt_marker import AttemptMarker
from airflow_mysql_cdc.hooks.attempt_recovery import OwnAttempt, work_root
from airflow_mysql_cdc.hooks.next_steps import in_airflow
from airflow_mysql_cdc.hooks.spark_submit import MySqlCdcSparkSubmitHook, SparkSubmitFailed
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


def test_a_final_exit_code_fails_the_task_for_good_with_the_end_of_the_output(
    recorder: SparkSubmitRecorder,
) -> None:
    recorder.behave(result={}, exit_code=ExitCode.CONFIGURATION)
    operator = SparkApplicationOperator(task_id="app", spark_conn_id="spark_local")
    with pytest.raises(AirflowFailException) as failure:
        _run(operator)
    assert str(failure.value) == (
        "app failed: configuration error (exit code 2).\n"
        "Last spark-submit output:\nrecorded spark-submit call"
    )


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
def test_the_failure_reason_is_the_applications_own_error_line_and_the_codes_meaning(
    recorder: SparkSubmitRecorder,
    error_line: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The hook's logger as a stdlib logger, which caplog reads (Airflow's is structlog's).
    monkeypatch.setattr(MySqlCdcSparkSubmitHook, "log", logging.getLogger("spark_submit_hook"))
    caplog.set_level(logging.DEBUG, logger="spark_submit_hook")
    recorder.behave(result={}, exit_code=ExitCode.BINLOG, stderr_lines=("some log line", error_line, "more"))
    operator = SparkApplicationOperator(task_id="app", spark_conn_id="spark_local")
    with pytest.raises(AirflowFailException) as failure:
        _run(operator)
    # The error line, then the code's meaning: the spark-submit command line used to end it (issue 34).
    assert str(failure.value) == f"{error_line}\napp failed: {ExitCode.BINLOG.meaning} (exit code 5)"
    (debug,) = [record for record in caplog.records if "exited with code 5: " in record.getMessage()]
    assert debug.levelno == logging.DEBUG and "--result-file" in debug.getMessage()  # the command, at DEBUG


def test_a_next_step_the_application_names_is_followed_by_how_to_take_it_in_airflow(
    recorder: SparkSubmitRecorder,
) -> None:
    step = NextStep.resnapshot("shop.orders")
    recorder.behave(result={}, exit_code=ExitCode.BINLOG, stderr_lines=(STATEMENT_ERROR, step.line()))
    operator = SparkApplicationOperator(task_id="app", spark_conn_id="spark_local")
    with pytest.raises(AirflowFailException) as failure:
        _run(operator)
    assert str(failure.value) == (
        f"{STATEMENT_ERROR}{in_airflow(step)}\napp failed: {ExitCode.BINLOG.meaning} (exit code 5)"
    )
    assert 'trigger the pipeline DAG with the conf {"resnapshot": ["shop.orders"]}' in str(failure.value)


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
    with pytest.raises(SparkSubmitFailed, match="^spark-submit exited with code 1.") as failure:
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
