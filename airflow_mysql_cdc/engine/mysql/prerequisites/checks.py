"""Can this server feed a CDC pipeline? Every check, all at once, each with its fix.

Invariant: the report lists *every* violation found, not the first one, so a data engineer fixes
their server in one round trip. Facts are gathered first (:func:`gather_facts`, the only part
that talks to MySQL) and judged second (:func:`evaluate`, pure), so each rule is unit-testable and
the integration tests only have to prove the facts are read correctly from a real server.

Error-level checks guard correctness (without them the pipeline would lose or misread changes);
warning-level checks are about operability and never fail the task.
"""

from __future__ import annotations

from collections.abc import Iterable

import pymysql

from airflow_mysql_cdc.engine.mysql.prerequisites.facts import (
    HOUR_S,
    MIN_RETENTION_FLOOR_S,
    PrerequisiteConfig,
    ServerFacts,
    gather_facts,
)
from airflow_mysql_cdc.engine.mysql.prerequisites.report import CheckResult, PrerequisiteReport, Status

__all__ = [
    "CheckResult",
    "PrerequisiteConfig",
    "PrerequisiteReport",
    "ServerFacts",
    "check_prerequisites",
    "evaluate",
]

# Types the pipeline can carry (binlog decoding and the snapshot share one mapping). VECTOR (9.0+)
# and anything newer are rejected until the mapping learns them.
CARRIED_DATA_TYPES = frozenset(
    (
        "tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "float", "double",
        "date", "datetime", "timestamp", "time", "year",
        "char", "varchar", "tinytext", "text", "mediumtext", "longtext",
        "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob",
        "json", "enum", "set", "bit",
        "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
        "geometrycollection", "geomcollection",
    )
)  # fmt: skip

# --- judging ----------------------------------------------------------------------------------


def _variable_check(
    facts: ServerFacts, name: str, expected: str, why: str, fix: str, *, accepted: Iterable[str] = ()
) -> CheckResult:
    actual = facts.variables.get(name)
    good = {expected.upper(), *(a.upper() for a in accepted)}
    if actual is None:
        return CheckResult(name, "error", expected or "(empty)", "(not reported by the server)", why, fix)
    status: Status = "ok" if actual.upper() in good else "error"
    shown_expected = expected or "(empty)"
    return CheckResult(name, status, shown_expected, actual or "(empty)", why, fix if status != "ok" else "")


def _format_duration(seconds: int) -> str:
    return f"{seconds / HOUR_S:g} h"


def _retention_checks(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
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


def _replica_checks(facts: ServerFacts) -> list[CheckResult]:
    if facts.replica_source is None:
        return []
    results = [
        _variable_check(
            facts,
            "log_replica_updates",
            "ON",
            f"this server replicates from {facts.replica_source}; without log_replica_updates the "
            "replicated changes are not in its binlog, so CDC from it misses them",
            "add log_replica_updates=ON to the server's configuration and restart it",
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


def _privilege_checks(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
    account = facts.grants.quoted_account
    missing = [p for p in ("REPLICATION SLAVE", "REPLICATION CLIENT") if not facts.grants.has_global(p)]
    results = [
        CheckResult(
            "replication privileges",
            "error" if missing else "ok",
            "REPLICATION SLAVE, REPLICATION CLIENT",
            f"missing {', '.join(missing)}" if missing else "granted",
            "REPLICATION SLAVE lets the reader stream the binlog; REPLICATION CLIENT lets it read "
            "binlog status and gtid_purged",
            f"GRANT {', '.join(missing)} ON *.* TO {account};" if missing else "",
        )
    ]
    denied = sorted(ref for ref in facts.select_denied if facts.tables.get(ref) is not None)
    if config.tables:
        results.append(
            CheckResult(
                "SELECT on tables",
                "error" if denied else "ok",
                "SELECT on every configured table",
                f"denied on {', '.join(map(str, denied))}" if denied else "granted",
                "snapshots read the tables with SELECT",
                " ".join(f"GRANT SELECT ON {ref.quoted} TO {account};" for ref in denied),
            )
        )
    return results


def _table_checks(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
    results = []
    for ref in config.tables:
        metadata = facts.tables.get(ref)
        if metadata is None:
            results.append(
                CheckResult(
                    f"table {ref}",
                    "error",
                    "exists",
                    "not found",
                    "a configured table must exist (and be visible to the connected user)",
                    f"check the name in the table list (schema.table), or GRANT SELECT ON {ref.quoted} "
                    f"TO {facts.grants.quoted_account};",
                )
            )
            continue
        if metadata.has_row_key:
            key = f"{metadata.key_name} ({', '.join(metadata.key_columns)})"
            results.append(CheckResult(f"row key of {ref}", "ok", "primary or unique NOT NULL key", key, ""))
        else:
            results.append(
                CheckResult(
                    f"row key of {ref}",
                    "error",
                    "primary or unique NOT NULL key",
                    "none",
                    "changes are merged and snapshots are chunked by the row key; without one, "
                    "updates and deletes cannot be matched to rows",
                    f"ALTER TABLE {ref.quoted} ADD PRIMARY KEY (<columns>); or exclude the table",
                )
            )
        unsupported = [c for c in metadata.columns if c.data_type not in CARRIED_DATA_TYPES]
        results.append(
            CheckResult(
                f"column types of {ref}",
                "error" if unsupported else "ok",
                "types the pipeline carries",
                ", ".join(f"{c.name} {c.column_type}" for c in unsupported) or "all supported",
                "a column the type mapping cannot carry would be lost or corrupted in the lake",
                "exclude the table, or change the column's type" if unsupported else "",
            )
        )
    return results


def _server_id_checks(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
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


def evaluate(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
    """Judge the facts; every check runs whatever the others found."""
    results = [
        _variable_check(
            facts, "log_bin", "ON",
            "changes are read from the binary log",
            "start mysqld with binary logging on (remove --skip-log-bin / --disable-log-bin; "
            "log_bin is not dynamic) and restart",
            accepted=("1",),
        ),
        _variable_check(
            facts, "gtid_mode", "ON",
            "checkpoints, resumption and snapshot watermarks are GTID sets",
            "SET PERSIST enforce_gtid_consistency = ON; then step gtid_mode through "
            "OFF_PERMISSIVE, ON_PERMISSIVE and ON with SET PERSIST gtid_mode = ... (wait for "
            "Ongoing_anonymous_transaction_count = 0 before the last step)",
        ),
        _variable_check(
            facts, "enforce_gtid_consistency", "ON",
            "gtid_mode=ON requires it; statements that cannot be logged with a GTID are refused",
            "SET PERSIST enforce_gtid_consistency = ON;",
        ),
        _variable_check(
            facts, "binlog_format", "ROW",
            "only row events carry the changed rows; STATEMENT/MIXED events cannot be applied",
            "SET PERSIST binlog_format = 'ROW'; (sessions already open keep their format)",
        ),
        _variable_check(
            facts, "binlog_row_image", "FULL",
            "MINIMAL/NOBLOB images omit columns, so the lake copy would lose values",
            "SET PERSIST binlog_row_image = 'FULL';",
        ),
        _variable_check(
            facts, "binlog_row_metadata", "FULL",
            "without FULL metadata the binlog has no column names: the reader would see "
            "UNKNOWN_COLn, wrong unsigned values and no ENUM/SET values",
            "SET PERSIST binlog_row_metadata = 'FULL';",
        ),
        _variable_check(
            facts, "binlog_row_value_options", "",
            "PARTIAL_JSON logs JSON updates as diffs the reader cannot apply to a full value",
            "SET PERSIST binlog_row_value_options = '';",
        ),
    ]  # fmt: skip
    if not config.engine_decodes_compressed_transactions:
        results.append(
            _variable_check(
                facts,
                "binlog_transaction_compression",
                "OFF",
                "mysql-replication 1.0.17 silently drops compressed transactions",
                "SET PERSIST binlog_transaction_compression = OFF;",
            )
        )
    if not config.engine_supports_tagged_gtids:
        tagged = sorted({f"{uuid}:{tag}" for uuid, tag in facts.gtid_executed.intervals_by_source if tag})
        results.append(
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
        )
    results += _retention_checks(facts, config)
    results += _replica_checks(facts)
    results += _privilege_checks(facts, config)
    results += _table_checks(facts, config)
    results += _server_id_checks(facts, config)
    return results


def check_prerequisites(
    connection: pymysql.connections.Connection, config: PrerequisiteConfig, *, server: str
) -> PrerequisiteReport:
    facts = gather_facts(connection, config)
    return PrerequisiteReport(
        server=server,
        server_version=facts.variables.get("version", "?"),
        results=tuple(evaluate(facts, config)),
    )
