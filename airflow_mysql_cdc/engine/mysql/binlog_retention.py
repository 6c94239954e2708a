"""How long the server keeps binlogs, per platform, read in one pass and judged by one function.

Invariant: :func:`retention_from` returns the retention the platform *guarantees*; where it promises
nothing, the guarantee is 0 and the headroom rule fails the run rather than hope:

- **Self-hosted MySQL 8.0 / 8.4 / 9.x**: ``binlog_expire_logs_seconds`` (0: never), or the deprecated
  ``expire_logs_days`` when the former is 0 (8.0 only; 8.4 removed it); with
  ``binlog_expire_logs_auto_purge=OFF`` (8.0.29+) nothing is purged automatically.
- **Amazon RDS for MySQL**: ``binlog retention hours`` from ``mysql.rds_configuration`` /
  ``CALL mysql.rds_show_configuration`` overrides the variable; NULL (the default) means binlogs are
  not retained (0 h: purged as soon as possible).
- **Aurora MySQL** (``@@aurora_version`` exists): the same setting; NULL means binlogs are cleaned up
  "lazily" and "might remain ... usually not longer than a day" (AWS's words): no guarantee, so 0.
- **Cloud SQL for MySQL** (``cloudsql_*`` variables exist): binlogs exist only with point-in-time
  recovery, and how long Cloud SQL keeps them (``transactionLogRetentionDays``; with logs in Cloud
  Storage, a shorter copy on the instance's disk, which is what a dump reads) is not visible from
  SQL: the retention is *unknown* until the pipeline configuration states it.
- On every platform ``binlog_retention_hours`` in the pipeline configuration wins over the server.

Read-only: SHOW, SELECT and ``CALL mysql.rds_show_configuration``. Guarded by
``tests/unit/test_binlog_retention_platforms.py`` and, on MySQL 9.7,
``tests/integration/test_binlog_headroom.py``.
"""

from __future__ import annotations

from typing import Any, Literal

from airflow_mysql_cdc.engine.mysql.prerequisites.facts import read_rds_binlog_retention_hours
from airflow_mysql_cdc.engine.values.headroom import HOUR_S, BinlogRetention, Platform

_VARIABLES = (
    "binlog_expire_logs_seconds", "binlog_expire_logs_auto_purge", "expire_logs_days", "aurora_version",
    "basedir", "log_bin",
)  # fmt: skip
RdsHours = int | None | Literal["absent"]


def detect_platform(variables: dict[str, str], rds_hours: RdsHours) -> Platform:
    if "aurora_version" in variables:
        return "aurora"
    if rds_hours != "absent" or variables.get("basedir", "").startswith("/rdsdbbin/"):
        return "rds"
    if any(name.startswith("cloudsql") for name in variables):
        return "cloud_sql"
    return "mysql"


def _from_server_variables(variables: dict[str, str], platform: Platform) -> BinlogRetention:
    if variables.get("binlog_expire_logs_auto_purge", "ON").upper() == "OFF":
        return BinlogRetention(platform, None, "binlog_expire_logs_auto_purge = OFF")
    expire_s = int(variables.get("binlog_expire_logs_seconds") or 0)
    if expire_s:
        return BinlogRetention(platform, expire_s, "binlog_expire_logs_seconds")
    expire_days = float(variables.get("expire_logs_days") or 0)
    if expire_days:
        return BinlogRetention(platform, int(expire_days * 24 * HOUR_S), "expire_logs_days (deprecated)")
    return BinlogRetention(platform, None, "binlog_expire_logs_seconds = 0")


def retention_from(
    variables: dict[str, str], rds_hours: RdsHours, *, override_hours: float | None = None
) -> BinlogRetention:
    """The guaranteed retention on this server (module doc); ``override_hours`` wins when given."""
    platform = detect_platform(variables, rds_hours)
    if override_hours is not None:
        return BinlogRetention(
            platform,
            int(override_hours * HOUR_S),
            "binlog_retention_hours in the pipeline configuration, which overrides the server",
        )
    if platform in ("rds", "aurora"):
        if rds_hours == "absent":
            return BinlogRetention(
                platform,
                None,
                "binlog retention hours not readable by this account: grant it EXECUTE on "
                'mysql.rds_show_configuration, or set "binlog_retention_hours" in the pipeline configuration',
                known=False,
            )
        if rds_hours is not None:
            return BinlogRetention(
                platform, rds_hours * HOUR_S, "binlog retention hours (mysql.rds_configuration)"
            )
        if platform == "aurora":
            return BinlogRetention(
                platform,
                0,
                "binlog retention hours is NULL: Aurora MySQL cleans binlogs up lazily (usually within a "
                "day), "
                "with no guaranteed time",
            )
        return BinlogRetention(
            platform, 0, "binlog retention hours is NULL: RDS does not retain binlogs (0 h)"
        )
    from_variables = _from_server_variables(variables, platform)
    if platform == "cloud_sql":
        return BinlogRetention(
            platform,
            from_variables.seconds,
            "Cloud SQL keeps binlogs only with point-in-time recovery, for a time not visible from SQL "
            f'(the server says {from_variables.describe()}); set "binlog_retention_hours" in the pipeline '
            "configuration",
            known=False,
        )
    return from_variables


def read_server_variables(cursor: Any) -> dict[str, str]:
    """The variables :func:`retention_from` reads, by lower-case name (absent ones left out)."""
    names = ", ".join(f"'{name}'" for name in _VARIABLES)
    cursor.execute(
        f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names}) OR Variable_name LIKE 'cloudsql%'"
    )
    return {str(name).lower(): str(value) for name, value in cursor.fetchall()}


def read_binlog_retention(cursor: Any, *, override_hours: float | None = None) -> BinlogRetention:
    variables = read_server_variables(cursor)
    return retention_from(variables, read_rds_binlog_retention_hours(cursor), override_hours=override_hours)
