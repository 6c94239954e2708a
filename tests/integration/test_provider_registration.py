"""Airflow discovers the provider and its connection type, and the hook reaches a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.get_provider_info import get_provider_info

AIRFLOW = Path(sys.executable).with_name("airflow")


def _airflow_cli(*args: str) -> str:
    result = subprocess.run([str(AIRFLOW), *args], capture_output=True, text=True, env=os.environ.copy())
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_provider_info_package_name_is_the_distribution_name() -> None:
    from importlib.metadata import distribution

    info = get_provider_info()
    assert info["package-name"] == distribution("airflow-mysql-cdc").metadata["Name"]
    assert [c["connection-type"] for c in info["connection-types"]] == ["mysql_cdc"]


def test_airflow_providers_list_shows_the_provider() -> None:
    assert "airflow-mysql-cdc" in _airflow_cli("providers", "list")


def test_airflow_knows_the_mysql_cdc_connection_type_and_its_hook() -> None:
    hooks = _airflow_cli("providers", "hooks")
    line = next(line for line in hooks.splitlines() if line.startswith("mysql_cdc "))
    assert "airflow_mysql_cdc.hooks.mysql_cdc.MySqlCdcHook" in line


@pytest.mark.mysql
@pytest.mark.parametrize("connection_type", ["mysql_cdc", "mysql"])
def test_hook_reads_gtid_state_through_either_connection_type(
    mysql_server: MySqlEndpoint, monkeypatch: pytest.MonkeyPatch, connection_type: str
) -> None:
    from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook

    connection = {
        "conn_type": connection_type,
        "host": mysql_server.host,
        "port": mysql_server.port,
        "login": mysql_server.user,
        "password": mysql_server.password,
        "extra": {"server_id": 9001},
    }
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", json.dumps(connection))
    hook = MySqlCdcHook("cdc_source")
    endpoint = hook.get_endpoint()
    assert endpoint.replication_server_id == 9001
    assert hook.test_connection()[0] is True
    with mysql_server.connect() as direct, direct.cursor() as cursor:
        cursor.execute("SELECT @@gtid_executed")
        assert hook.get_gtid_executed() == GtidSet.parse(cursor.fetchone()[0])


@pytest.mark.mysql
def test_hook_rejects_a_connection_of_another_type(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook

    monkeypatch.setenv("AIRFLOW_CONN_NOT_MYSQL", json.dumps({"conn_type": "postgres", "host": "x"}))
    with pytest.raises(ValueError, match="has type 'postgres'; use one of mysql_cdc, mysql"):
        MySqlCdcHook("not_mysql").get_endpoint()


@pytest.mark.mysql
def test_hook_connects_over_tls_with_the_ca_from_the_connection_extras(
    mysql_servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook

    server = mysql_servers.start(["--require-secure-transport=ON"], name="tls_only")
    connection = {
        "conn_type": "mysql_cdc",
        "host": "127.0.0.1",
        "port": server.port,
        "login": "root",
        "extra": {"ssl_ca": str(server.datadir / "ca.pem"), "ssl_verify_identity": "false"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_TLS_SOURCE", json.dumps(connection))
    with MySqlCdcHook("tls_source").get_conn() as tls_connection, tls_connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_version'")
        assert cursor.fetchone()[1].startswith("TLS")
