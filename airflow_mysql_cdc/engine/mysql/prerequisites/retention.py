"""Binlog retention: binlogs must outlive the gap between two runs, or a run must re-snapshot."""

from __future__ import annotations

from airflow_mysql_cdc.engine.mysql.prerequisites.facts import (
    HOUR_S,
    MIN_RETENTION_FLOOR_S,
    PrerequisiteConfig,
    ServerFacts,
)
from airflow_mysql_cdc.engine.mysql.prerequisites.report import CheckResult, Status


def _format_duration(seconds: int) -> str:
    return f"{seconds / HOUR_S:g} h"


def check_retention(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
    required = max(config.min_binlog_retention_s, MIN_RETENTION_FLOOR_S)
    why = (
        "a run resumes from the previous run's checkpoint; binlogs expired before the next run "
        "force a full re-snapshot"
    )
    results = []
    auto_purge = facts.variables.get("binlog_expire_logs_auto_purge", "ON").upper() == "ON"
    expire_s = int(facts.variables.get("binlog_expire_logs_seconds") or 0)
    expire_days = int(float(facts.variables.get("expire_logs_days") or 0))
    effective = expire_s or expire_days * 24 * HOUR_S
    if not auto_purge or effective == 0:
        actual = "never expire" if auto_purge else "automatic purge OFF"
        results.append(CheckResult("binlog retention", "ok", f">= {_format_duration(required)}", actual, why))
    else:
        status: Status = "ok" if effective >= required else "error"
        results.append(
            CheckResult(
                "binlog retention",
                status,
                f">= {_format_duration(required)}",
                _format_duration(effective),
                why,
                "" if status == "ok" else f"SET PERSIST binlog_expire_logs_seconds = {required};",
            )
        )
    if facts.rds_binlog_retention_hours != "absent":
        hours = facts.rds_binlog_retention_hours
        status = "ok" if hours is not None and hours * HOUR_S >= required else "error"
        results.append(
            CheckResult(
                "RDS binlog retention hours",
                status,
                f">= {required // HOUR_S}",
                "NULL (purged as soon as possible)" if hours is None else str(hours),
                why + "; on RDS/Aurora, mysql.rds_configuration overrides the server variable",
                ""
                if status == "ok"
                else f"CALL mysql.rds_set_configuration('binlog retention hours', {-(-required // HOUR_S)});",
            )
        )
    return results
