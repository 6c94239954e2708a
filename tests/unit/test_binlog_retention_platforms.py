"""How long each platform keeps binlogs, from what the server shows (or the configuration says)."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.mysql.binlog_retention import detect_platform, retention_from

HOUR = 3600


@pytest.mark.parametrize(
    ("variables", "seconds", "source"),
    [
        ({"binlog_expire_logs_seconds": "2592000"}, 2592000, "binlog_expire_logs_seconds"),
        ({"binlog_expire_logs_seconds": "0", "expire_logs_days": "3"}, 3 * 24 * HOUR,
         "expire_logs_days (deprecated)"),
        ({"binlog_expire_logs_seconds": "0", "expire_logs_days": "0"}, None,
         "binlog_expire_logs_seconds = 0"),
        ({"binlog_expire_logs_seconds": "600", "binlog_expire_logs_auto_purge": "OFF"}, None,
         "binlog_expire_logs_auto_purge = OFF"),
    ],
)  # fmt: skip
def test_self_hosted_mysql_reads_the_expire_variables(variables, seconds, source) -> None:
    retention = retention_from(variables, "absent")
    assert (retention.platform, retention.seconds, retention.source, retention.known) == (
        "mysql", seconds, source, True,
    )  # fmt: skip


def test_rds_hours_override_the_server_variable_and_null_means_nothing_is_kept() -> None:
    variables = {"binlog_expire_logs_seconds": "2592000", "basedir": "/rdsdbbin/mysql/"}
    assert retention_from(variables, 48).seconds == 48 * HOUR
    null = retention_from(variables, None)
    assert (null.platform, null.seconds) == ("rds", 0)
    assert "RDS does not retain binlogs (0 h)" in null.source


def test_aurora_null_is_lazy_clean_up_which_guarantees_nothing() -> None:
    aurora = retention_from({"aurora_version": "3.08.0", "binlog_expire_logs_seconds": "0"}, None)
    assert (aurora.platform, aurora.seconds) == ("aurora", 0)
    assert "lazily" in aurora.source
    assert retention_from({"aurora_version": "3.08.0"}, 72).seconds == 72 * HOUR


def test_rds_whose_setting_this_account_cannot_read_is_unknown_and_says_how_to_tell_us() -> None:
    unreadable = retention_from({"basedir": "/rdsdbbin/mysql-8.0.39/"}, "absent")
    assert unreadable.platform == "rds" and not unreadable.known
    assert (
        "mysql.rds_show_configuration" in unreadable.source and "binlog_retention_hours" in unreadable.source
    )


def test_cloud_sql_retention_is_not_visible_from_sql_until_the_configuration_states_it() -> None:
    variables = {"cloudsql_iam_authentication": "ON", "binlog_expire_logs_seconds": "86400"}
    assert detect_platform(variables, "absent") == "cloud_sql"
    unknown = retention_from(variables, "absent")
    assert not unknown.known and "point-in-time recovery" in unknown.source
    stated = retention_from(variables, "absent", override_hours=168)
    assert (stated.seconds, stated.known) == (168 * HOUR, True)
    assert "pipeline configuration" in stated.source


def test_the_configured_retention_wins_over_every_server() -> None:
    assert retention_from({"binlog_expire_logs_seconds": "600"}, "absent", override_hours=0.5).seconds == 1800
    assert retention_from({"aurora_version": "3"}, None, override_hours=24).seconds == 24 * HOUR
