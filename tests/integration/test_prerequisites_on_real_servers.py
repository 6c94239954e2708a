"""The prerequisites check against real servers: each wrong setting is seen failing, all at once."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.mysql.prerequisites.checks import (
    PrerequisiteConfig,
    PrerequisiteReport,
    check_prerequisites,
)
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.support.mysql import ServerPool, create_user, execute

pytestmark = pytest.mark.mysql


def _check(endpoint: MySqlEndpoint, tables: tuple[TableRef, ...] = (), **config) -> PrerequisiteReport:
    with endpoint.connect() as connection:
        return check_prerequisites(
            connection,
            PrerequisiteConfig(
                tables=tables, reader_server_ids=config.pop("reader_server_ids", (4001,)), **config
            ),
            server=str(endpoint),
        )


def _statuses(report: PrerequisiteReport) -> dict[str, str]:
    return {r.name: r.status for r in report.results}


def test_sandbox_server_passes_every_check(mysql_database: MySqlEndpoint) -> None:
    execute(mysql_database, "CREATE TABLE orders (id BIGINT PRIMARY KEY, note VARCHAR(10))")
    report = _check(mysql_database, (TableRef(mysql_database.database, "orders"),))
    assert report.ok, report.render_table()
    assert report.warnings == []


def test_server_started_with_every_wrong_setting_reports_every_violation(mysql_servers: ServerPool) -> None:
    server = mysql_servers.start(
        [
            "--gtid-mode=OFF",
            "--enforce-gtid-consistency=OFF",
            "--binlog-format=MIXED",
            "--binlog-row-image=MINIMAL",
            "--binlog-row-metadata=MINIMAL",
            "--binlog-row-value-options=PARTIAL_JSON",
            "--binlog-transaction-compression=ON",
            "--binlog-expire-logs-seconds=3600",
        ],
        name="every_wrong_setting",
    )
    report = _check(server.endpoint)
    errors = {r.name for r in report.errors}
    assert errors == {
        "gtid_mode",
        "enforce_gtid_consistency",
        "binlog_format",
        "binlog_row_image",
        "binlog_row_metadata",
        "binlog_row_value_options",
        "binlog retention",
    }
    table = report.render_table()
    assert "FAILED: 7 error(s)" in table
    assert "fix: SET PERSIST binlog_row_metadata = 'FULL';" in table
    assert "fix: SET PERSIST binlog_expire_logs_seconds = 86400;" in table


def test_server_without_binary_log_fails_log_bin(mysql_servers: ServerPool) -> None:
    server = mysql_servers.start(["--skip-log-bin"], name="no_binlog")
    results = {r.name: r for r in _check(server.endpoint).results}
    assert results["log_bin"].status == "error"
    assert "--skip-log-bin" in results["log_bin"].fix


def test_dynamic_settings_changed_at_runtime_and_tagged_gtids_are_caught(mysql_servers: ServerPool) -> None:
    server = mysql_servers.start(name="changed_at_runtime")
    execute(
        server.endpoint,
        "SET PERSIST binlog_row_metadata = 'MINIMAL'",
        "SET GLOBAL binlog_row_image = 'NOBLOB'",
        "SET gtid_next = 'AUTOMATIC:nightly_batch'",
        "CREATE DATABASE tagged_write",
        "SET gtid_next = 'AUTOMATIC'",
    )
    report = _check(server.endpoint)
    assert {r.name for r in report.errors} == {"binlog_row_metadata", "binlog_row_image", "tagged GTIDs"}
    (tagged,) = [r for r in report.errors if r.name == "tagged GTIDs"]
    assert tagged.actual.endswith(":nightly_batch")


def test_user_with_only_select_is_told_which_grants_to_add(mysql_database: MySqlEndpoint) -> None:
    schema = mysql_database.database
    execute(mysql_database, "CREATE TABLE a (id INT PRIMARY KEY)", "CREATE TABLE b (id INT PRIMARY KEY)")
    user = create_user(mysql_database, "select_only", "pw-select-only", f"SELECT ON `{schema}`.`a`")
    report = _check(user, (TableRef(schema, "a"), TableRef(schema, "b")))
    results = {r.name: r for r in report.results}
    assert results["replication privileges"].status == "error"
    assert results["replication privileges"].fix == (
        "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'select_only'@'127.0.0.1';"
    )
    # Table b is invisible to the user: it is reported missing, with the grant that would show it.
    assert results[f"table {schema}.b"].status == "error"
    assert f"GRANT SELECT ON `{schema}`.`b` TO 'select_only'@'127.0.0.1';" in results[f"table {schema}.b"].fix
    assert results[f"row key of {schema}.a"].status == "ok"
    assert "pw-select-only" not in report.to_json()


def test_select_privilege_is_probed_per_table(mysql_database: MySqlEndpoint) -> None:
    schema = mysql_database.database
    execute(mysql_database, "CREATE TABLE c (id INT PRIMARY KEY, secret INT)")
    user = create_user(
        mysql_database,
        "column_only",
        "pw",
        "REPLICATION SLAVE, REPLICATION CLIENT ON *.*",
        f"SELECT (id) ON `{schema}`.`c`",
    )
    results = {r.name: r for r in _check(user, (TableRef(schema, "c"),)).results}
    assert results["SELECT on tables"].status == "error"
    assert results["SELECT on tables"].fix == f"GRANT SELECT ON `{schema}`.`c` TO 'column_only'@'127.0.0.1';"


def test_tables_without_a_usable_key_or_with_uncarried_types_are_named(mysql_database: MySqlEndpoint) -> None:
    schema = mysql_database.database
    execute(
        mysql_database,
        "CREATE TABLE no_key (a INT, b INT)",
        "CREATE TABLE nullable_unique (a INT, UNIQUE KEY (a))",
        "CREATE TABLE unique_not_null (a INT NOT NULL, b INT, UNIQUE KEY ux (a))",
        "CREATE TABLE with_vector (id INT PRIMARY KEY, v VECTOR(3))",
    )
    tables = tuple(
        TableRef(schema, t)
        for t in ("no_key", "nullable_unique", "unique_not_null", "with_vector", "missing")
    )
    results = {r.name: r for r in _check(mysql_database, tables).results}
    assert results[f"row key of {schema}.no_key"].status == "error"
    assert results[f"row key of {schema}.nullable_unique"].status == "error"
    assert results[f"row key of {schema}.unique_not_null"].actual == "ux (a)"
    assert results[f"column types of {schema}.with_vector"].actual == "v vector(3)"
    assert results[f"table {schema}.missing"].status == "error"


def test_reader_server_id_equal_to_the_servers_is_an_error(mysql_server: MySqlEndpoint) -> None:
    server_id = execute(mysql_server, "SELECT @@server_id")[0][0]
    results = {r.name: r for r in _check(mysql_server, reader_server_ids=(server_id,)).results}
    assert results["reader server_id"].status == "error"
    assert f"clash: {server_id}" in results["reader server_id"].actual


def test_replica_without_log_replica_updates_and_commit_order_fails(mysql_servers: ServerPool) -> None:
    primary = mysql_servers.start(name="prereq_primary")
    replica = mysql_servers.start(
        [
            "--log-replica-updates=OFF",
            "--replica-parallel-workers=4",
            "--replica-preserve-commit-order=OFF",
        ],
        name="prereq_replica",
    )
    execute(
        replica.endpoint,
        f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={primary.port}, "
        "SOURCE_USER='root', SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1",
    )
    report = _check(replica.endpoint)
    statuses = _statuses(report)
    assert statuses["log_replica_updates"] == "error"
    assert statuses["replica_preserve_commit_order"] == "error"
    assert f"127.0.0.1:{primary.port}" in {r.name: r for r in report.results}["log_replica_updates"].why
