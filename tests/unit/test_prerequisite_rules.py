"""Each prerequisite rule judged on hand-made facts; the integration tests prove the facts are real."""

from __future__ import annotations

from dataclasses import replace

import pytest

from airflow_mysql_cdc.engine.mysql.grants import AccountGrants
from airflow_mysql_cdc.engine.mysql.prerequisites.checks import (
    PrerequisiteConfig,
    PrerequisiteReport,
    ServerFacts,
    evaluate,
)
from airflow_mysql_cdc.engine.mysql.prerequisites.requirements import REQUIRED_SETTINGS, STREAM_SETTINGS
from airflow_mysql_cdc.engine.mysql.schema import Column, TableMetadata, TableRef
from airflow_mysql_cdc.engine.values.gtid import GtidSet

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
ORDERS = TableRef("shop", "orders")
HEALTHY_VARIABLES = {
    "log_bin": "ON",
    "gtid_mode": "ON",
    "enforce_gtid_consistency": "ON",
    "binlog_format": "ROW",
    "binlog_row_image": "FULL",
    "binlog_row_metadata": "FULL",
    "binlog_row_value_options": "",
    "binlog_transaction_compression": "OFF",
    "binlog_expire_logs_seconds": str(7 * 86400),
    "binlog_expire_logs_auto_purge": "ON",
    "server_id": "1",
    "version": "8.4.3",
}


def _orders(key: tuple[str, ...] = ("id",), extra_columns: tuple[Column, ...] = ()) -> TableMetadata:
    columns = (Column("id", "bigint", "bigint", False), *extra_columns)
    return TableMetadata(
        ORDERS, "InnoDB", columns, key, "primary" if key else None, "PRIMARY" if key else None
    )


def _facts(**changes) -> ServerFacts:
    facts = ServerFacts(
        variables=dict(HEALTHY_VARIABLES),
        gtid_executed=GtidSet.parse(f"{U}:1-10"),
        grants=AccountGrants(
            "cdc@%", ("GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `cdc`@`%`",)
        ),
        tables={ORDERS: _orders()},
    )
    return replace(facts, **changes)


def _config(**changes) -> PrerequisiteConfig:
    return replace(PrerequisiteConfig(tables=(ORDERS,), reader_server_ids=(1001,)), **changes)


def _by_name(facts: ServerFacts, config: PrerequisiteConfig | None = None) -> dict[str, str]:
    return {r.name: r.status for r in evaluate(facts, config or _config())}


def test_healthy_server_passes_every_check() -> None:
    results = evaluate(_facts(), _config())
    assert [r for r in results if r.status != "ok"] == []


@pytest.mark.parametrize(
    ("variable", "bad_value"),
    [
        ("log_bin", "OFF"),
        ("gtid_mode", "OFF_PERMISSIVE"),
        ("enforce_gtid_consistency", "WARN"),
        ("binlog_format", "MIXED"),
        ("binlog_row_image", "NOBLOB"),
        ("binlog_row_metadata", "MINIMAL"),
        ("binlog_row_value_options", "PARTIAL_JSON"),
    ],
)
def test_each_wrong_setting_is_an_error_with_a_fix(variable: str, bad_value: str) -> None:
    facts = _facts(variables={**HEALTHY_VARIABLES, variable: bad_value})
    (result,) = [r for r in evaluate(facts, _config()) if r.name == variable]
    assert (result.status, result.actual) == ("error", bad_value)
    assert result.fix and result.why


def test_compression_is_accepted_because_the_engine_decodes_it() -> None:
    facts = _facts(variables={**HEALTHY_VARIABLES, "binlog_transaction_compression": "ON"})
    assert "binlog_transaction_compression" not in _by_name(facts)


def test_tagged_gtids_in_gtid_executed_are_named() -> None:
    facts = _facts(gtid_executed=GtidSet.parse(f"{U}:1-10:nightly:1-3"))
    (result,) = [r for r in evaluate(facts, _config()) if r.name == "tagged GTIDs"]
    assert result.status == "error"
    assert result.actual == f"{U}:nightly"


@pytest.mark.parametrize(
    ("expire_seconds", "required_s", "status"),
    [("86400", 86400, "ok"), ("3600", 86400, "error"), ("0", 86400, "ok"), ("172800", 3 * 86400, "error")],
)
def test_binlog_retention_must_cover_the_minimum(expire_seconds: str, required_s: int, status: str) -> None:
    facts = _facts(variables={**HEALTHY_VARIABLES, "binlog_expire_logs_seconds": expire_seconds})
    assert _by_name(facts, _config(min_binlog_retention_s=required_s))["binlog retention"] == status


def test_minimum_retention_is_never_below_24_hours() -> None:
    facts = _facts(variables={**HEALTHY_VARIABLES, "binlog_expire_logs_seconds": "7200"})
    assert _by_name(facts, _config(min_binlog_retention_s=3600))["binlog retention"] == "error"


def test_rds_retention_hours_null_means_binlogs_vanish() -> None:
    results = {r.name: r for r in evaluate(_facts(rds_binlog_retention_hours=None), _config())}
    assert results["RDS binlog retention hours"].status == "error"
    assert "rds_set_configuration('binlog retention hours', 24)" in results["RDS binlog retention hours"].fix
    assert _by_name(_facts(rds_binlog_retention_hours=48))["RDS binlog retention hours"] == "ok"


def test_replica_without_log_replica_updates_or_commit_order_fails_both() -> None:
    variables = {
        **HEALTHY_VARIABLES,
        "log_replica_updates": "OFF",
        "replica_parallel_workers": "4",
        "replica_preserve_commit_order": "OFF",
    }
    statuses = _by_name(_facts(variables=variables, replica_source="primary:3306"))
    assert statuses["log_replica_updates"] == "error"
    assert statuses["replica_preserve_commit_order"] == "error"
    assert "log_replica_updates" not in _by_name(_facts(variables=variables))


def test_missing_replication_privileges_give_the_grant_statement() -> None:
    grants = AccountGrants("cdc@%", ("GRANT SELECT ON *.* TO `cdc`@`%`",))
    results = {r.name: r for r in evaluate(_facts(grants=grants), _config())}
    assert (
        results["replication privileges"].fix
        == "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'cdc'@'%';"
    )


def test_all_privileges_covers_replication() -> None:
    grants = AccountGrants("root@%", ("GRANT ALL PRIVILEGES ON *.* TO `root`@`%` WITH GRANT OPTION",))
    assert _by_name(_facts(grants=grants))["replication privileges"] == "ok"


def test_table_without_a_row_key_is_named() -> None:
    results = {r.name: r for r in evaluate(_facts(tables={ORDERS: _orders(key=())}), _config())}
    assert results["row key of shop.orders"].status == "error"
    assert "ALTER TABLE `shop`.`orders` ADD PRIMARY KEY" in results["row key of shop.orders"].fix


def test_missing_table_is_named() -> None:
    assert _by_name(_facts(tables={ORDERS: None}))["table shop.orders"] == "error"


def test_unsupported_column_type_is_named() -> None:
    vector = Column("embedding", "vector", "vector(3)", True)
    results = {
        r.name: r for r in evaluate(_facts(tables={ORDERS: _orders(extra_columns=(vector,))}), _config())
    }
    assert results["column types of shop.orders"].status == "error"
    assert results["column types of shop.orders"].actual == "embedding vector(3)"


@pytest.mark.parametrize(
    ("reader_ids", "registered", "status"),
    [
        ((1001,), frozenset(), "ok"),
        ((1,), frozenset(), "error"),
        ((7, 7), frozenset(), "error"),
        ((5,), {5}, "error"),
    ],
)
def test_reader_server_id_must_be_unique(reader_ids, registered, status) -> None:
    facts = _facts(registered_replica_ids=frozenset(registered))
    assert _by_name(facts, _config(reader_server_ids=reader_ids))["reader server_id"] == status


def test_no_configured_server_id_is_only_a_warning() -> None:
    report = PrerequisiteReport("s", "9.7", tuple(evaluate(_facts(), _config(reader_server_ids=()))))
    assert report.ok
    assert [w.name for w in report.warnings] == ["reader server_id"]


def test_report_table_lists_failures_first_with_their_fix() -> None:
    facts = _facts(variables={**HEALTHY_VARIABLES, "binlog_format": "MIXED"})
    report = PrerequisiteReport("mysql://cdc@db:3306/", "8.4.3", tuple(evaluate(facts, _config())))
    table = report.render_table()
    lines = table.splitlines()
    assert lines[2].startswith("ERROR") and "binlog_format" in lines[2]
    assert "fix: SET PERSIST binlog_format = 'ROW';" in table
    assert table.endswith("FAILED: 1 error(s), 0 warning(s), 13 passed on mysql://cdc@db:3306/ (MySQL 8.4.3)")
    assert report.to_dict()["error_count"] == 1


def test_the_report_and_the_binlog_stream_read_one_requirements_table() -> None:
    reported = {result.name for result in evaluate(_facts(), _config())}
    assert {setting.name for setting in REQUIRED_SETTINGS} <= reported
    assert set(STREAM_SETTINGS) <= set(REQUIRED_SETTINGS)
    assert {setting.name for setting in STREAM_SETTINGS} == {
        "gtid_mode",
        "binlog_format",
        "binlog_row_image",
        "binlog_row_metadata",
    }
