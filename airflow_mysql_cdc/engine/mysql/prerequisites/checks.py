"""Can this server feed a CDC pipeline? Every check, all at once, each with its fix.

Invariant: the report lists *every* violation found, not the first one, so a data engineer fixes
their server in one round trip. Facts are gathered first (:func:`.facts.gather_facts`, the only part
that talks to MySQL) and judged second by :data:`CHECKS`, small pure functions of the facts, so each
rule is unit-testable (``tests/unit/test_prerequisite_rules.py``) and the integration tests only have
to prove the facts are read correctly from a real server (``test_prerequisites_on_real_servers.py``).

Error-level checks guard correctness (without them the pipeline would lose or misread changes);
warning-level checks are about operability and never fail the task.
"""

from __future__ import annotations

from collections.abc import Callable

import pymysql

from airflow_mysql_cdc.engine.mysql.prerequisites.access import check_privileges, check_tables
from airflow_mysql_cdc.engine.mysql.prerequisites.facts import PrerequisiteConfig, ServerFacts, gather_facts
from airflow_mysql_cdc.engine.mysql.prerequisites.replication import check_reader_server_ids, check_replica
from airflow_mysql_cdc.engine.mysql.prerequisites.report import CheckResult, PrerequisiteReport
from airflow_mysql_cdc.engine.mysql.prerequisites.retention import check_retention
from airflow_mysql_cdc.engine.mysql.prerequisites.settings import check_settings, check_tagged_gtids

__all__ = [
    "CHECKS",
    "CheckResult",
    "PrerequisiteConfig",
    "PrerequisiteReport",
    "ServerFacts",
    "check_prerequisites",
    "evaluate",
]

Check = Callable[[ServerFacts, PrerequisiteConfig], list[CheckResult]]

CHECKS: tuple[Check, ...] = (
    check_settings,
    check_tagged_gtids,
    check_retention,
    check_replica,
    check_privileges,
    check_tables,
    check_reader_server_ids,
)
"""Every check, in report order; each runs whatever the others found."""


def evaluate(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
    """Judge the facts with every check of :data:`CHECKS`."""
    return [result for check in CHECKS for result in check(facts, config)]


def check_prerequisites(
    connection: pymysql.connections.Connection, config: PrerequisiteConfig, *, server: str
) -> PrerequisiteReport:
    facts = gather_facts(connection, config)
    return PrerequisiteReport(
        server=server,
        server_version=facts.variables.get("version", "?"),
        results=tuple(evaluate(facts, config)),
    )
