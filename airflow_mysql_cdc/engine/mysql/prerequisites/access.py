"""What the connected account can reach: replication privileges, SELECT, and each configured table."""

from __future__ import annotations

from airflow_mysql_cdc.engine.mysql.prerequisites.facts import PrerequisiteConfig, ServerFacts
from airflow_mysql_cdc.engine.mysql.prerequisites.report import CheckResult
from airflow_mysql_cdc.engine.mysql.prerequisites.requirements import CARRIED_DATA_TYPES
from airflow_mysql_cdc.engine.mysql.table_standing import TableStanding, judge_table


def check_privileges(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
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


def check_tables(facts: ServerFacts, config: PrerequisiteConfig) -> list[CheckResult]:
    results = []
    for ref in config.tables:
        metadata = facts.tables.get(ref)
        standing = judge_table(on_source=metadata is not None, lake_holds_it=ref in config.in_the_lake)
        if standing is TableStanding.GONE:
            results.append(
                CheckResult(
                    f"table {ref}",
                    "warning",
                    "exists",
                    "not found, but the lake holds it: dropped or renamed after it joined the pipeline",
                    "the binlog application takes it out of the pipeline at the DROP or RENAME and keeps "
                    "its lake table, marked (docs/operations.md, 'Schema changes')",
                    "nothing to do; remove it from the table list once you no longer need it there",
                )
            )
            continue
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
