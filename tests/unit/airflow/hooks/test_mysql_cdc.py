"""MySqlCdcHook: an Airflow connection becomes the engine's endpoint (real servers: tests/integration/
test_provider_registration.py)."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_ssl_mode_and_a_pinned_server_public_key_come_from_the_extras(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = tmp_path / "public_key.pem"
    key.write_text("-----BEGIN PUBLIC KEY-----\nMIIB...\n-----END PUBLIC KEY-----\n")
    extra = {"ssl_mode": "disabled", "server_public_key_path": str(key)}
    _connection(monkeypatch, "plain", conn_type="mysql", host="db", extra=extra)
    endpoint = MySqlCdcHook("plain").get_endpoint()
    assert endpoint.tls.effective_mode == "DISABLED"
    assert endpoint.server_public_key == key.read_text()


def test_iam_authentication_is_refused_saying_why_and_what_to_use_instead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The mysql provider's ``iam`` extra: a token as the password would expire while a run's Spark
    driver and executors still open connections, so the hook refuses it before anything connects."""
    extra = {"iam": True, "aws_conn_id": "aws_default"}
    _connection(monkeypatch, "rds", conn_type="mysql", host="db.rds.amazonaws.com", login="cdc", extra=extra)
    with pytest.raises(ValueError) as raised:
        MySqlCdcHook("rds").get_endpoint()
    message = str(raised.value)
    assert "connection 'rds' asks for IAM database authentication (extra 'iam')" in message
    assert "15 minutes on RDS" in message and "Spark driver and executors" in message
    assert "password account" in message and "docs/platforms/README.md" in message


def test_a_connection_of_another_type_is_refused_naming_the_types_it_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _connection(monkeypatch, "pg", conn_type="postgres", host="db")
    with pytest.raises(ValueError, match="connection 'pg' has type 'postgres'; use one of mysql_cdc, mysql"):
        MySqlCdcHook("pg").get_endpoint()


class _Cursor:
    def __init__(self, rows: list[tuple[str, str]]) -> None:
        self.rows = rows
        self.executed: list[tuple[str, object]] = []

    def __enter__(self) -> _Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def execute(self, query: str, args: object = None) -> None:
        self.executed.append((query, args))

    def fetchall(self) -> list[tuple[str, str]]:
        return self.rows


class _Connection:
    def __init__(self, cursor: _Cursor) -> None:
        self._cursor = cursor

    def __enter__(self) -> _Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def cursor(self) -> _Cursor:
        return self._cursor


def test_missing_tables_are_those_information_schema_lacks_compared_without_case(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cursor = _Cursor([("shop", "Orders"), ("shop", "payments"), ("crm", "customers")])
    monkeypatch.setattr(MySqlCdcHook, "get_conn", lambda hook: _Connection(cursor))
    missing = MySqlCdcHook("shop").get_missing_tables(["shop.orders", "shop.refunds", "crm.customers"])
    assert missing == frozenset({"shop.refunds"})
    ((query, schemas),) = cursor.executed
    assert "information_schema.TABLES" in query and schemas == ["crm", "shop"]


def test_no_configured_table_asks_the_server_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MySqlCdcHook, "get_conn", lambda hook: pytest.fail("connected"))
    assert MySqlCdcHook("shop").get_missing_tables([]) == frozenset()
