"""Endpoints carry credentials; they must travel by environment and never print the password."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.endpoint import ENVIRONMENT_VARIABLE, MySqlEndpoint, TlsOptions

SECRET = "s3cr3t-Pa55"


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


def test_tls_options_map_to_pymysql_ssl_arguments() -> None:
    kwargs = _endpoint().connection_kwargs()
    assert kwargs["ssl"] == {"ca": "/etc/ca.pem", "check_hostname": True}
    assert "ssl" not in MySqlEndpoint("h").connection_kwargs()
