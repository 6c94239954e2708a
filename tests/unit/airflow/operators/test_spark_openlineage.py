"""The Spark provider's OpenLineage injection through our spark-submit: the transport's API key
reaches the driver's environment, never argv."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.errors import ConfigurationError
from airflow_mysql_cdc.engine.runtime.spark_tasks import SECRET_CONF_VARIABLE, secret_spark_conf
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.operators import spark_application
from airflow_mysql_cdc.operators.spark_application import ApplicationSecrets, SparkApplicationOperator
from airflow_mysql_cdc.operators.spark_openlineage import REDACTION_CONF, split_secret_properties
from tests.support.openlineage import openlineage_on
from tests.support.spark_submit import SparkSubmitRecorder

API_KEY = "OpenLineage-Api-Key-5521"


@pytest.fixture
def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SparkSubmitRecorder:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    return SparkSubmitRecorder(tmp_path, monkeypatch)


def _transport_properties(properties: dict, context: object) -> dict:
    """What the OpenLineage provider injects for an http transport with an API key."""
    return {
        **properties,
        "spark.openlineage.transport.type": "http",
        "spark.openlineage.transport.url": "https://lineage.example",
        "spark.openlineage.transport.auth.type": "api_key",
        "spark.openlineage.transport.auth.apiKey": f"Bearer {API_KEY}",
    }


def _run(operator: SparkApplicationOperator) -> None:
    operator.run_application(
        "app.py",
        name="lineage",
        config_json="{}",
        secrets=ApplicationSecrets.of(MySqlEndpoint(host="db", user="cdc", password="Db-Password-77"), {}),
    )


def test_the_transports_api_key_reaches_the_driver_environment_not_argv(
    recorder: SparkSubmitRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.providers.common.compat.openlineage.utils import spark

    monkeypatch.setattr(spark, "inject_transport_information_into_spark_properties", _transport_properties)
    monkeypatch.setattr(spark_application, "get_current_context", lambda: {})
    operator = SparkApplicationOperator(
        task_id="app", spark_conn_id="spark_local", openlineage_inject_transport_info=True
    )
    _run(operator)

    (call,) = recorder.calls()
    argv = " ".join(call.argv)
    assert "spark.openlineage.transport.url=https://lineage.example" in argv
    assert API_KEY not in argv
    passed = secret_spark_conf(call.environment)
    assert passed == {
        "spark.openlineage.transport.auth.type": "api_key",
        "spark.openlineage.transport.auth.apiKey": f"Bearer {API_KEY}",
    }


def test_the_parent_job_goes_into_the_spark_properties(
    recorder: SparkSubmitRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.providers.common.compat.openlineage.utils import spark

    def parent(properties: dict, context: dict) -> dict:
        return {**properties, "spark.openlineage.parentJobName": context["job"]}

    monkeypatch.setattr(spark, "inject_parent_job_information_into_spark_properties", parent)
    monkeypatch.setattr(spark_application, "get_current_context", lambda: {"job": "pipeline.replicate"})
    _run(
        SparkApplicationOperator(
            task_id="app", spark_conn_id="spark_local", openlineage_inject_parent_job_info=True
        )
    )

    (call,) = recorder.calls()
    assert "spark.openlineage.parentJobName=pipeline.replicate" in call.argv
    assert SECRET_CONF_VARIABLE not in call.environment


def test_injection_is_off_unless_the_openlineage_section_turns_it_on(
    recorder: SparkSubmitRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not SparkApplicationOperator(task_id="off").openlineage_inject_transport_info
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__SPARK_INJECT_PARENT_JOB_INFO", "true")
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__SPARK_INJECT_TRANSPORT_INFO", "true")
    operator = SparkApplicationOperator(task_id="on")
    assert (operator.openlineage_inject_parent_job_info, operator.openlineage_inject_transport_info) == (
        True,
        True,
    )


def test_auth_and_header_properties_of_any_transport_are_secret() -> None:
    split = split_secret_properties(
        {
            "spark.openlineage.transport.type": "composite",
            "spark.openlineage.transport.transports.main.auth.apiKey": "k1",
            "spark.openlineage.transport.headers.Authorization": "Bearer k2",
            "spark.openlineage.transport.url": "https://lineage.example",
            "spark.executor.memory": "1g",
        }
    )
    assert sorted(split.secret) == [
        "spark.openlineage.transport.headers.Authorization",
        "spark.openlineage.transport.transports.main.auth.apiKey",
    ]
    assert "spark.executor.memory" in split.public
    assert re.search(split.public[REDACTION_CONF], "spark.openlineage.transport.transports.main.auth.apiKey")
    assert re.search(split.public[REDACTION_CONF], "spark.openlineage.transport.headers.Authorization")
    assert not re.search(split.public[REDACTION_CONF], "spark.openlineage.transport.url")
    assert split_secret_properties({REDACTION_CONF: "mine", **split.secret}).public == {
        REDACTION_CONF: "mine"
    }


def test_the_real_providers_transport_injection_keeps_the_api_key_off_argv(
    recorder: SparkSubmitRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the OpenLineage provider's own injection and an http transport configured in Airflow."""
    transport = {
        "type": "http",
        "url": "https://lineage.example",
        "auth": {"type": "api_key", "apiKey": API_KEY},
    }
    monkeypatch.setattr(spark_application, "get_current_context", lambda: {})
    with openlineage_on(monkeypatch, transport):
        operator = SparkApplicationOperator(
            task_id="app", spark_conn_id="spark_local", openlineage_inject_transport_info=True
        )
        _run(operator)

    (call,) = recorder.calls()
    assert "spark.openlineage.transport.url=https://lineage.example" in call.argv
    assert API_KEY not in " ".join(call.argv)
    assert (
        secret_spark_conf(call.environment)["spark.openlineage.transport.auth.apiKey"] == f"Bearer {API_KEY}"
    )


def test_a_malformed_secret_conf_variable_is_a_configuration_error_without_its_value() -> None:
    with pytest.raises(ConfigurationError, match=f"{SECRET_CONF_VARIABLE} is not a JSON object") as raised:
        secret_spark_conf({SECRET_CONF_VARIABLE: f"apiKey={API_KEY}"})
    assert API_KEY not in str(raised.value)
    assert secret_spark_conf({}) == {}
