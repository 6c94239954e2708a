"""MySqlCdcHook: an Airflow connection becomes the engine's endpoint (real servers: tests/integration/
test_provider_registration.py)."""

from __future__ import annotations

import json

import pytest

from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook


def _connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: object) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))


def test_the_connections_fields_and_extras_become_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = {"server_id": "9001", "ssl_ca": "/etc/ca.pem", "ssl_verify_identity": "true"}
    _connection(
        monkeypatch,
        "shop",
        conn_type="mysql_cdc",
        host="db",
        port=3307,
        login="cdc",
        password="pw-1",
        extra=extra,
    )
    endpoint = MySqlCdcHook("shop").get_endpoint()
    assert (endpoint.host, endpoint.port, endpoint.user, endpoint.replication_server_id) == (
        "db",
        3307,
        "cdc",
        9001,
    )
    assert (endpoint.tls.ca, endpoint.tls.verify_identity) == ("/etc/ca.pem", True)
    assert "pw-1" not in repr(endpoint)


def test_the_mysql_providers_ssl_extra_is_understood(monkeypatch: pytest.MonkeyPatch) -> None:
    ssl = json.dumps({"ca": "/ca.pem", "cert": "/cert.pem", "key": "/key.pem"})
    _connection(monkeypatch, "legacy", conn_type="mysql", host="db", extra={"ssl": ssl})
    tls = MySqlCdcHook("legacy").get_endpoint().tls
    assert (tls.ca, tls.cert, tls.key) == ("/ca.pem", "/cert.pem", "/key.pem")


def test_a_connection_of_another_type_is_refused_naming_the_types_it_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _connection(monkeypatch, "pg", conn_type="postgres", host="db")
    with pytest.raises(ValueError, match="connection 'pg' has type 'postgres'; use one of mysql_cdc, mysql"):
        MySqlCdcHook("pg").get_endpoint()
