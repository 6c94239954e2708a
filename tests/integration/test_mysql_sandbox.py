"""The test server really is a CDC-ready MySQL, and several can run side by side."""

from __future__ import annotations

import os

import pytest

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.mysql import TEST_DSN_VARIABLE, ServerPool, execute, load_sandbox_module, scalar

pytestmark = pytest.mark.mysql


def test_shared_server_runs_with_gtid_and_full_row_metadata(mysql_server: MySqlEndpoint) -> None:
    settings = execute(
        mysql_server,
        "SELECT @@gtid_mode, @@enforce_gtid_consistency, @@log_bin, @@binlog_format,"
        " @@binlog_row_image, @@binlog_row_metadata",
    )[0]
    assert settings == ("ON", "ON", 1, "ROW", "FULL", "FULL")


@pytest.mark.skipif(bool(os.environ.get(TEST_DSN_VARIABLE)), reason="checks the provisioned sandbox")
def test_sandbox_is_mysql_9_7_from_debian(mysql_server: MySqlEndpoint) -> None:
    assert scalar(mysql_server, "SELECT @@version").startswith("9.7.")


def test_each_write_adds_one_gtid_of_the_server(mysql_database: MySqlEndpoint) -> None:
    before = GtidSet.parse(scalar(mysql_database, "SELECT @@gtid_executed"))
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    after = GtidSet.parse(scalar(mysql_database, "SELECT @@gtid_executed"))
    server_uuid = scalar(mysql_database, "SELECT @@server_uuid")
    assert before <= after
    assert (after - before).count() == 2
    assert (after - before).uuids == {server_uuid}


def test_each_test_gets_its_own_empty_database(mysql_database: MySqlEndpoint) -> None:
    assert mysql_database.database and mysql_database.database.startswith("t_test_each_test")
    assert execute(mysql_database, "SHOW TABLES") == []


def test_two_servers_run_side_by_side_with_their_own_gtid_history(mysql_servers: ServerPool) -> None:
    first = mysql_servers.start(name="side_by_side_a")
    second = mysql_servers.start(name="side_by_side_b")
    for server in (first, second):
        execute(server.endpoint, "CREATE DATABASE IF NOT EXISTS demo")
    first_uuid = scalar(first.endpoint, "SELECT @@server_uuid")
    second_uuid = scalar(second.endpoint, "SELECT @@server_uuid")
    assert first.port != second.port
    assert first_uuid != second_uuid
    assert GtidSet.parse(scalar(first.endpoint, "SELECT @@gtid_executed")).uuids == {first_uuid}
    assert GtidSet.parse(scalar(second.endpoint, "SELECT @@gtid_executed")).uuids == {second_uuid}


def test_extra_flags_override_the_cdc_defaults(mysql_servers: ServerPool) -> None:
    server = mysql_servers.start(
        ["--binlog-format=MIXED", "--binlog-row-metadata=MINIMAL"], name="misconfigured"
    )
    assert execute(server.endpoint, "SELECT @@binlog_format, @@binlog_row_metadata")[0] == (
        "MIXED",
        "MINIMAL",
    )


def test_second_start_reuses_the_running_server_and_its_data(mysql_servers: ServerPool) -> None:
    server = mysql_servers.start(name="idempotent")
    execute(server.endpoint, "CREATE DATABASE kept")
    sandbox = load_sandbox_module()
    pid_before = sandbox.Server(server.datadir, server.port).pid()
    again = sandbox.start(port=server.port, datadir=server.datadir, log=lambda _: None)
    assert again.pid() == pid_before
    server.stop()
    sandbox.start(port=server.port, datadir=server.datadir, log=lambda _: None)
    assert execute(server.endpoint, "SHOW DATABASES LIKE 'kept'") == [("kept",)]


def test_starting_on_a_busy_port_names_the_port(mysql_servers: ServerPool, tmp_path) -> None:
    busy = mysql_servers.start(name="busy_port")
    sandbox = load_sandbox_module()
    with pytest.raises(sandbox.SandboxError, match=f"port {busy.port} on 127.0.0.1 is in use"):
        sandbox.start(port=busy.port, datadir=tmp_path / "other", log=lambda _: None)
