"""The server settings CDC needs (the one table of :mod:`.requirements`), and tagged GTIDs."""

from __future__ import annotations

from collections.abc import Iterable

from airflow_mysql_cdc.engine.mysql.prerequisites.facts import PrerequisiteConfig, ServerFacts
from airflow_mysql_cdc.engine.mysql.prerequisites.report import CheckResult, Status
from airflow_mysql_cdc.engine.mysql.prerequisites.requirements import REQUIRED_SETTINGS


def variable_check(
    facts: ServerFacts, name: str, expected: str, why: str, fix: str, *, accepted: Iterable[str] = ()
) -> CheckResult:
    actual = facts.variables.get(name)
    good = {expected.upper(), *(a.upper() for a in accepted)}
    if actual is None:
        return CheckResult(name, "error", expected or "(empty)", "(not reported by the server)", why, fix)
    status: Status = "ok" if actual.upper() in good else "error"
    shown_expected = expected or "(empty)"
    return CheckResult(name, status, shown_expected, actual or "(empty)", why, fix if status != "ok" else "")


def check_settings(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
    """Every row of :data:`.requirements.REQUIRED_SETTINGS`."""
    return [
        variable_check(facts, s.name, s.expected, s.why, s.fix, accepted=s.accepted)
        for s in REQUIRED_SETTINGS
    ]


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
