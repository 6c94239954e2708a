"""A source connection that cannot be opened: the message names the connection id and the fix, and
only what a retry can help is retried. Sockets here are real (a closed port, an unknown name); the
wrong password against a real server is in tests/integration/test_gtid_sensors_in_a_dag.py."""

from __future__ import annotations

import asyncio
import datetime
import json
import socket

import pymysql
import pytest
from airflow.sdk import DAG
from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.values.tls import MySqlLoginError
from airflow_mysql_cdc.hooks.connection_errors import (
    SourceLoginError,
    SourceUnreachableError,
    explain_connection_failure,
    from_event,
    to_event,
)
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.sensors.gtid_sensors import MySqlGtidReachedSensor
from airflow_mysql_cdc.triggers.gtid_state import GtidStateTrigger
from tests.support.airflow_context import runtime_task_instance

SERVER = "mysql://cdc@db.example.com:3306/"
PASSWORD = "s3cret-pw"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, host: str, port: int) -> None:
    fields = {"conn_type": "mysql_cdc", "host": host, "port": port, "login": "cdc", "password": PASSWORD}
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))


@pytest.mark.parametrize(
    ("code", "said", "fix"),
    [
        (1045, "Access denied for user 'cdc'@'10.0.0.7' (using password: YES)", "right login and password"),
        (1130, "Host '10.0.0.7' is not allowed to connect to this MySQL server", "CREATE USER"),
        (1049, "Unknown database 'shopp'", "empty that field"),
        (1129, "Host '10.0.0.7' is blocked because of many connection errors", "FLUSH HOSTS"),
        (2003, "Can't connect to MySQL server on 'db' ([Errno -2] Name or service not known)", "resolve"),
    ],
)
def test_what_only_a_configuration_change_fixes_fails_at_once_naming_the_connection_and_the_fix(
    code: int, said: str, fix: str
) -> None:
    error = explain_connection_failure("shop_mysql", SERVER, pymysql.err.OperationalError(code, said))
    assert isinstance(error, SourceLoginError) and isinstance(error, AirflowFailException)
    message = str(error)
    assert message.startswith(f"connection 'shop_mysql' ({SERVER}): ")
    assert said in message and fix in message and "not retried" in message


@pytest.mark.parametrize(
    "said",
    [
        "Can't connect to MySQL server on 'db' ([Errno 111] Connection refused)",
        "Can't connect to MySQL server on 'db' (timed out)",
        "Can't connect to MySQL server on 'db' ([Errno -3] Temporary failure in name resolution)",
    ],
)
def test_a_server_that_refuses_or_does_not_answer_is_retried_with_what_to_check(said: str) -> None:
    error = explain_connection_failure("shop_mysql", SERVER, pymysql.err.OperationalError(2003, said))
    assert isinstance(error, SourceUnreachableError) and not isinstance(error, AirflowFailException)
    assert str(error).startswith(f"connection 'shop_mysql' ({SERVER}): the MySQL server cannot be reached")
    assert said in str(error) and "The task is retried" in str(error) and "firewall" in str(error)


def test_tls_advice_is_kept_and_named_after_the_connection() -> None:
    advice = "cdc@db:3306: the server offers no TLS, and the connection's ssl_mode is REQUIRED. Enable TLS."
    error = explain_connection_failure("shop_mysql", SERVER, MySqlLoginError(advice))
    assert isinstance(error, SourceLoginError) and isinstance(error, MySqlLoginError)
    assert (
        str(error)
        == f"connection 'shop_mysql' ({SERVER}): {advice} Not retried: only a change of configuration helps."
    )


def test_errors_after_the_login_are_not_ours_to_explain() -> None:
    assert explain_connection_failure("c", SERVER, pymysql.err.ProgrammingError(1146, "no table")) is None
    assert explain_connection_failure("c", SERVER, ValueError("x")) is None


def test_a_closed_port_through_the_hook_is_a_retryable_error_without_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = _closed_port()
    _connection(monkeypatch, "closed_port", "127.0.0.1", port)
    with pytest.raises(SourceUnreachableError) as raised:
        MySqlCdcHook("closed_port").get_gtid_executed()
    message = str(raised.value)
    assert message.startswith(f"connection 'closed_port' (mysql://cdc@127.0.0.1:{port}/): ")
    assert "Connection refused" in message and PASSWORD not in message
    assert MySqlCdcHook("closed_port").test_connection() == (False, message)  # the UI's Test button


def test_an_unknown_host_through_the_hook_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    _connection(monkeypatch, "typo_host", "mysql.does-not-exist.invalid", 3306)
    with pytest.raises(SourceLoginError, match="this worker's DNS does not know the host"):
        MySqlCdcHook("typo_host").get_server_state()


def test_a_deferred_sensor_raises_what_poke_mode_raises_for_a_closed_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _connection(monkeypatch, "closed_port", "127.0.0.1", _closed_port())
    with DAG("sensors", schedule="@daily", start_date=datetime.datetime(2026, 11, 1)):
        sensor = MySqlGtidReachedSensor(task_id="reached", mysql_cdc_conn_id="closed_port", target="")
    with pytest.raises(SourceUnreachableError) as poked:
        sensor.execute(runtime_task_instance(sensor).get_template_context())

    trigger = GtidStateTrigger(conn_id="closed_port", kind="reached", gtid_set="", deadline=2e9)

    async def first_event() -> dict:
        return [event.payload async for event in trigger.run()][0]

    event = asyncio.run(first_event())
    assert event == {"state": "error", "message": str(poked.value), "retryable": True, "payload": {}}
    with pytest.raises(SourceUnreachableError) as resumed:
        sensor.execute_complete({}, event)
    assert str(resumed.value) == str(poked.value)


def test_a_login_error_survives_the_trip_through_the_triggerer_as_not_retryable() -> None:
    error = SourceLoginError("connection 'c' (...): MySQL refused the login")
    assert type(from_event(to_event(error))) is SourceLoginError
    assert str(from_event(to_event(error))) == str(error)
