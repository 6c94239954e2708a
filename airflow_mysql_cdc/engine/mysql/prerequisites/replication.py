"""Reading from a replica, and the server_id every binlog reader registers with."""

from __future__ import annotations

from airflow_mysql_cdc.engine.mysql.prerequisites.facts import PrerequisiteConfig, ServerFacts
from airflow_mysql_cdc.engine.mysql.prerequisites.report import CheckResult, Status
from airflow_mysql_cdc.engine.mysql.prerequisites.requirements import RequiredSetting
from airflow_mysql_cdc.engine.mysql.prerequisites.settings import variable_check


def check_replica(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
    if facts.replica_source is None:
        return []
    results = [
        variable_check(
            facts,
            RequiredSetting(
                "log_replica_updates",
                "ON",
                f"this server replicates from {facts.replica_source}; without log_replica_updates the "
                "replicated changes are not in its binlog, so CDC from it misses them",
                "add log_replica_updates=ON to the server's configuration and restart it",
            ),
        )
    ]
    workers = int(facts.variables.get("replica_parallel_workers") or 0)
    preserve = facts.variables.get("replica_preserve_commit_order") or "OFF"
    status: Status = "ok" if workers <= 1 or preserve.upper() == "ON" else "error"
    results.append(
        CheckResult(
            "replica_preserve_commit_order",
            status,
            "ON when replica_parallel_workers > 1",
            f"{preserve} (replica_parallel_workers={workers})",
            "parallel appliers may commit out of source order, leaving gaps in the replica's GTID "
            "set that a checkpoint would wrongly skip",
            ""
            if status == "ok"
            else "STOP REPLICA SQL_THREAD; SET PERSIST replica_preserve_commit_order = ON; "
            "START REPLICA SQL_THREAD;",
        )
    )
    return results


def check_reader_server_ids(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
    why = (
        "each binlog reader registers with a server_id; a duplicate makes the server kill the other "
        "connection with the same id"
    )
    ids = list(config.reader_server_ids)
    if not ids:
        return [
            CheckResult(
                "reader server_id",
                "warning",
                "configured",
                "not configured",
                why,
                "set the extra server_id on the connection to a value no replica or reader uses",
            )
        ]
    server_id = int(facts.variables.get("server_id") or 0)
    registered = facts.registered_replica_ids or frozenset()
    clashes = sorted(
        {i for i in ids if ids.count(i) > 1}
        | {i for i in ids if i == server_id}
        | {i for i in ids if i in registered}
    )
    suggestion = max([server_id, *registered, *ids]) + 1
    results = [
        CheckResult(
            "reader server_id",
            "error" if clashes else "ok",
            f"unique, not {server_id} (the server's) nor a registered replica's",
            f"{', '.join(map(str, ids))}" + (f" (clash: {', '.join(map(str, clashes))})" if clashes else ""),
            why,
            f"choose ids from {suggestion} upwards in the connection extra server_id" if clashes else "",
        )
    ]
    if facts.registered_replica_ids is None:
        results.append(
            CheckResult(
                "registered replicas",
                "warning",
                "readable",
                "SHOW REPLICAS not permitted",
                "other replicas' server_ids could not be compared with ours",
                f"GRANT REPLICATION SLAVE ON *.* TO {facts.grants.quoted_account};",
            )
        )
    return results
