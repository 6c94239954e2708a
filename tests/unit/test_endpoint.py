"""Endpoints carry credentials; they must travel by environment and never print the password."""

from __future__ import annotations

import pickle
import ssl
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.runtime.executor_secrets import SecretsReference
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.window_task import WindowTask, for_executors
from airflow_mysql_cdc.engine.values.endpoint import (
    ENVIRONMENT_VARIABLE,
    MySqlEndpoint,
    TlsOptions,
    preferred_tls_context,
)
from airflow_mysql_cdc.engine.values.tls import MySqlLoginError, parse_tls_mode

SECRET = "s3cr3t-Pa55"
PUBLIC_KEY = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg...\n-----END PUBLIC KEY-----\n"


def _endpoint() -> MySqlEndpoint:
    return MySqlEndpoint(
        host="db.example.com",
        port=3307,
        user="cdc",
        password=SECRET,
        database="shop",
        tls=TlsOptions(ca="/etc/ca.pem", verify_identity=True),
        replication_server_id=4242,
    )


def test_password_is_absent_from_repr_and_str() -> None:
    endpoint = _endpoint()
    assert SECRET not in repr(endpoint)
    assert SECRET not in str(endpoint)
    assert str(endpoint) == "mysql://cdc@db.example.com:3307/shop"


def test_endpoint_round_trips_through_the_environment() -> None:
    environment = _endpoint().to_environment()
    assert list(environment) == [ENVIRONMENT_VARIABLE]
    assert MySqlEndpoint.from_environment(environment) == _endpoint()


def test_missing_environment_variable_explains_how_credentials_travel() -> None:
    with pytest.raises(LookupError, match="never through arguments"):
        MySqlEndpoint.from_environment({})


def test_url_parsing_decodes_credentials() -> None:
    endpoint = MySqlEndpoint.from_url("mysql://us%40er:p%3Ass@10.0.0.1:3310/db")
    assert (endpoint.user, endpoint.password, endpoint.host, endpoint.port, endpoint.database) == (
        "us@er",
        "p:ss",
        "10.0.0.1",
        3310,
        "db",
    )


def test_files_choose_the_mode_when_none_is_given_as_the_options_did_before_modes() -> None:
    assert TlsOptions().effective_mode == "PREFERRED"
    assert TlsOptions(ca="/ca.pem").effective_mode == "VERIFY_CA"
    assert TlsOptions(ca="/ca.pem", verify_identity=True).effective_mode == "VERIFY_IDENTITY"
    assert TlsOptions(cert="/c.pem", key="/k.pem").effective_mode == "REQUIRED"
    assert TlsOptions(ca="/ca.pem", mode="REQUIRED").effective_mode == "REQUIRED"


@pytest.mark.parametrize(
    ("mode", "verify_mode", "check_hostname"),
    [
        ("PREFERRED", ssl.CERT_NONE, False),
        ("REQUIRED", ssl.CERT_NONE, False),
        ("VERIFY_CA", ssl.CERT_REQUIRED, False),
        ("VERIFY_IDENTITY", ssl.CERT_REQUIRED, True),
    ],
)
def test_each_mode_builds_the_context_the_mysql_client_would_verify_with(
    mode: str, verify_mode: ssl.VerifyMode, check_hostname: bool
) -> None:
    context = MySqlEndpoint("h", tls=TlsOptions(mode=parse_tls_mode(mode))).connection_kwargs()["ssl"]
    assert (context.verify_mode, context.check_hostname) == (verify_mode, check_hostname)
    assert not context.verify_flags & ssl.VERIFY_X509_STRICT  # MySQL's auto-generated certificates fail it


def test_disabled_asks_pymysql_for_no_tls_at_all() -> None:
    kwargs = MySqlEndpoint("h", tls=TlsOptions(mode="DISABLED")).connection_kwargs()
    assert kwargs["ssl_disabled"] is True and "ssl" not in kwargs


def test_a_verifying_context_is_built_once_per_options_in_a_process() -> None:
    options = TlsOptions(mode="VERIFY_CA")
    first = MySqlEndpoint("a", tls=options).connection_kwargs()["ssl"]
    assert MySqlEndpoint("b", 3307, tls=TlsOptions(mode="VERIFY_CA")).connection_kwargs()["ssl"] is first


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mode": "DISABLED", "ca": "/ca.pem"}, "ssl_mode DISABLED contradicts the TLS files"),
        ({"cert": "/c.pem"}, "ssl_cert and ssl_key go together"),
        ({"mode": "SOMETIMES"}, "is not one of DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY"),
    ],
)
def test_contradictory_or_unknown_tls_settings_are_refused_naming_the_fix(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        TlsOptions(**options)


def test_a_tls_file_missing_on_this_machine_is_named_with_where_it_must_be(tmp_path: Path) -> None:
    missing = tmp_path / "rds-ca-bundle.pem"
    with pytest.raises(
        MySqlLoginError, match="the Airflow worker, the Spark driver and every Spark executor"
    ) as raised:
        MySqlEndpoint("h", tls=TlsOptions(ca=str(missing))).connection_kwargs()
    assert f"ssl_ca {missing}" in str(raised.value)


def test_ssl_mode_is_read_as_the_mysql_client_spells_it_in_any_case() -> None:
    assert parse_tls_mode("verify-identity") == "VERIFY_IDENTITY"
    assert parse_tls_mode(" Disabled ") == "DISABLED"
    assert parse_tls_mode("") is None and parse_tls_mode(None) is None
    with pytest.raises(ValueError, match="the MySQL client's --ssl-mode"):
        parse_tls_mode("on")


def test_the_pinned_server_public_key_reaches_pymysql_and_travels_with_the_endpoint() -> None:
    endpoint = replace(_endpoint(), server_public_key=PUBLIC_KEY, tls=TlsOptions(mode="DISABLED"))
    assert endpoint.connection_kwargs()["server_public_key"] == PUBLIC_KEY.encode()
    assert MySqlEndpoint.from_environment(endpoint.to_environment()) == endpoint


def test_what_snapshot_tasks_carry_to_executors_keeps_the_tls_settings_and_drops_the_password() -> None:
    """Executors open their own connections with the endpoint inside each task (its file paths
    must exist there: docs/platforms/README.md)."""
    endpoint = replace(_endpoint(), server_public_key=PUBLIC_KEY)
    task = WindowTask(endpoint, TableRef("shop", "t"), (), ("id",), (), Chunk(0, None, None), None)
    (shipped,) = for_executors([task], lambda secrets: SecretsReference("f"))
    arrived = pickle.loads(pickle.dumps(shipped)).endpoint
    assert (arrived.tls, arrived.server_public_key) == (endpoint.tls, PUBLIC_KEY)
    assert arrived.password == "" and SECRET.encode() not in pickle.dumps(shipped)


def test_without_tls_options_every_connection_shares_pymysqls_preferred_tls_context() -> None:
    """PyMySQL would build this context per connection (18-20 ms); same settings, built once."""
    first = MySqlEndpoint("h").connection_kwargs()["ssl"]
    assert first is MySqlEndpoint("other", 3307).connection_kwargs()["ssl"] is preferred_tls_context()
    assert isinstance(first, ssl.SSLContext)
    assert first.verify_mode == ssl.CERT_NONE and not first.check_hostname
    assert not first.verify_flags & ssl.VERIFY_X509_STRICT
