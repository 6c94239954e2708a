"""SparkApplicationOperator: the application's exit code decides whether a retry can help."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.hooks.spark_submit import SparkSubmitFailed
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
