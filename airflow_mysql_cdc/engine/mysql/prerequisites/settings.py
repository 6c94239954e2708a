"""The server settings CDC needs (the one table of :mod:`.requirements`), and tagged GTIDs."""

from __future__ import annotations

from airflow_mysql_cdc.engine.mysql.prerequisites.facts import PrerequisiteConfig, ServerFacts
from airflow_mysql_cdc.engine.mysql.prerequisites.report import CheckResult, Status
from airflow_mysql_cdc.engine.mysql.prerequisites.requirements import REQUIRED_SETTINGS, RequiredSetting


def variable_check(facts: ServerFacts, setting: RequiredSetting) -> CheckResult:
    """``setting`` judged on the server's value by :meth:`RequiredSetting.is_met_by` (as the stream)."""
    actual = facts.variables.get(setting.name)
    expected = setting.expected or "(empty)"
    if actual is None:
        return CheckResult(
            setting.name, "error", expected, "(not reported by the server)", setting.why, setting.fix
        )
    status: Status = "ok" if setting.is_met_by(actual) else "error"
    return CheckResult(
        setting.name,
        status,
        expected,
        actual or "(empty)",
        setting.why,
        setting.fix_for(actual) if status != "ok" else "",
    )


def check_settings(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
    """Every row of :data:`.requirements.REQUIRED_SETTINGS`."""
    return [variable_check(facts, setting) for setting in REQUIRED_SETTINGS]


def check_tagged_gtids(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
    """Tagged GTIDs (MySQL 8.3+) in ``gtid_executed``: the reader cannot attribute their rows."""
    tagged = sorted({f"{uuid}:{tag}" for uuid, tag in facts.gtid_executed.intervals_by_source if tag})
    return [
        CheckResult(
            "tagged GTIDs",
            "error" if tagged else "ok",
            "none in gtid_executed",
            ", ".join(tagged) if tagged else "none",
            "mysql-replication 1.0.17 cannot parse tagged GTIDs (MySQL 8.3+): their rows would be "
            "attributed to the wrong transaction",
            "stop writing tagged transactions (SET gtid_next = 'AUTOMATIC:<tag>'); the pipeline "
            "cannot read binlogs that contain them"
            if tagged
            else "",
        )
    ]
