"""Facts about a server that the prerequisite checks judge, read in one pass.

Invariant: this module only reads (SHOW, SELECT ... LIMIT 0); it changes nothing on the server.
Statements renamed across MySQL 8.0 → 8.4 (``SHOW REPLICA STATUS``/``SHOW SLAVE STATUS``,
``log_replica_updates``/``log_slave_updates``) are tried in both forms, and facts are normalised to
the new names so the judging code never branches on the version.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pymysql

from airflow_mysql_cdc.engine.mysql.grants import AccountGrants, read_account_grants
from airflow_mysql_cdc.engine.mysql.schema import TableMetadata, TableRef, read_table_metadata
from airflow_mysql_cdc.engine.values.gtid import GtidSet

HOUR_S = 3600
MIN_RETENTION_FLOOR_S = 24 * HOUR_S
_VARIABLES = (
    "log_bin", "gtid_mode", "enforce_gtid_consistency", "binlog_format", "binlog_row_image",
    "binlog_row_metadata", "binlog_row_value_options", "binlog_transaction_compression",
    "binlog_expire_logs_seconds", "binlog_expire_logs_auto_purge", "expire_logs_days", "server_id",
    "log_replica_updates", "log_slave_updates", "replica_parallel_workers", "slave_parallel_workers",
    "replica_preserve_commit_order", "slave_preserve_commit_order", "version",
)  # fmt: skip
# MySQL 8.0 before 8.0.26 only knows the old names; judge everything under the new ones.
_RENAMED_VARIABLES = {
    "log_replica_updates": "log_slave_updates",
    "replica_parallel_workers": "slave_parallel_workers",
    "replica_preserve_commit_order": "slave_preserve_commit_order",
}


@dataclass(frozen=True)
class PrerequisiteConfig:
    tables: tuple[TableRef, ...]
    min_binlog_retention_s: int = MIN_RETENTION_FLOOR_S
    reader_server_ids: tuple[int, ...] = ()
    in_the_lake: frozenset[TableRef] = frozenset()
    """Configured tables the lake already holds: one missing from the server was dropped or renamed
    after it joined, and the binlog application takes it out of the pipeline at that DDL."""


@dataclass(frozen=True)
class ServerFacts:
    """What :func:`gather_facts` read; plain data so :func:`evaluate` can be tested without MySQL."""

    variables: dict[str, str]
    gtid_executed: GtidSet
    grants: AccountGrants
    tables: dict[TableRef, TableMetadata | None]
    select_denied: frozenset[TableRef] = frozenset()
    replica_source: str | None = None
    """Host:port of the source when this server is a replica; None when it is not."""
    rds_binlog_retention_hours: int | None | Literal["absent"] = "absent"
    registered_replica_ids: frozenset[int] | None = frozenset()
    """server_ids of replicas registered with this server; None when we may not list them."""
    notes: tuple[str, ...] = ()


def _first_working(cursor: pymysql.cursors.Cursor, statements: Sequence[str]) -> list[dict] | None:
    """Rows of the first statement the server accepts (names changed across 8.0 → 8.4)."""
    last_error: pymysql.MySQLError | None = None
    for statement in statements:
        try:
            cursor.execute(statement)
        except pymysql.err.ProgrammingError as error:
            last_error = error
            continue
        except pymysql.err.OperationalError as error:
            if error.args[0] in (1227, 1045):  # access denied: the caller reports it
                return None
            raise
        columns = [d[0] for d in cursor.description or ()]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    if last_error is not None and last_error.args[0] in (1227,):
        return None
    raise last_error if last_error else RuntimeError("no statement to run")


def gather_facts(connection: pymysql.connections.Connection, config: PrerequisiteConfig) -> ServerFacts:
    """What the checks judge, read in one session: nothing here decides, nothing there queries."""
    notes: list[str] = []
    with connection.cursor() as cursor:
        variables = _variables(cursor)
        cursor.execute("SELECT @@GLOBAL.gtid_executed")
        gtid_executed = GtidSet.parse(cursor.fetchone()[0])
        grants = read_account_grants(cursor)
        replica_source = _replica_source(cursor, notes)
        rds_hours = _rds_binlog_retention_hours(cursor)
        registered = _registered_replica_ids(cursor)
        tables, select_denied = _tables(cursor, config.tables)
    return ServerFacts(
        variables=variables,
        gtid_executed=gtid_executed,
        grants=grants,
        tables=tables,
        select_denied=frozenset(select_denied),
        replica_source=replica_source,
        rds_binlog_retention_hours=rds_hours,
        registered_replica_ids=registered,
        notes=tuple(notes),
    )


def _variables(cursor: Any) -> dict[str, str]:
    """The server variables the checks read, by their current names (older names filled in)."""
    names = ", ".join(f"'{name}'" for name in _VARIABLES)
    cursor.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})")
    variables = {str(name).lower(): str(value) for name, value in cursor.fetchall()}
    for name, old_name in _RENAMED_VARIABLES.items():
        if name not in variables and old_name in variables:
            variables[name] = variables[old_name]
    return variables


def _replica_source(cursor: Any, notes: list[str]) -> str | None:
    """``host:port`` of the server this one replicates from (None: it is no replica)."""
    try:
        replica_rows = _first_working(cursor, ("SHOW REPLICA STATUS", "SHOW SLAVE STATUS"))
    except pymysql.MySQLError as error:
        notes.append(f"could not read replica status: {error.args[-1]}")
        return None
    if not replica_rows:
        return None
    row = replica_rows[0]
    host = row.get("Source_Host") or row.get("Master_Host")
    port = row.get("Source_Port") or row.get("Master_Port")
    return f"{host}:{port}"


def _rds_binlog_retention_hours(cursor: Any) -> int | None | Literal["absent"]:
    """RDS's ``binlog retention hours`` (None: unset), or "absent" where there is no RDS configuration."""
    return read_rds_binlog_retention_hours(cursor)


def read_rds_binlog_retention_hours(cursor: Any) -> int | None | Literal["absent"]:
    """RDS/Aurora's ``binlog retention hours`` (None: NULL), or "absent" where there is none to read.

    The table ``mysql.rds_configuration`` first; an account without access to ``mysql.*`` may still
    run ``CALL mysql.rds_show_configuration`` (the documented way), so that is tried next.
    """
    try:
        cursor.execute("SELECT value FROM mysql.rds_configuration WHERE name = 'binlog retention hours'")
    except pymysql.MySQLError as error:
        if error.args[0] not in (1146, 1142, 1044):  # no such table; no access to mysql.*
            raise
        if error.args[0] == 1146:
            return "absent"
        return _rds_show_configuration_hours(cursor)
    row = cursor.fetchone()
    return int(row[0]) if row and row[0] is not None else None


def _rds_show_configuration_hours(cursor: Any) -> int | None | Literal["absent"]:
    try:
        cursor.execute("CALL mysql.rds_show_configuration")
    except pymysql.MySQLError:  # no such procedure (not RDS) or no EXECUTE on it: nothing to read
        return "absent"
    rows = list(cursor.fetchall())
    while cursor.nextset():  # a CALL's trailing status result
        pass
    for row in rows:
        if str(row[0]).lower() == "binlog retention hours":
            return int(row[1]) if row[1] is not None else None
    return "absent"


def _registered_replica_ids(cursor: Any) -> frozenset[int] | None:
    """The server ids of the replicas registered now (None: not readable)."""
    try:
        replicas = _first_working(cursor, ("SHOW REPLICAS", "SHOW SLAVE HOSTS"))
    except pymysql.MySQLError:
        return None
    if replicas is None:
        return None
    return frozenset(int(r.get("Server_Id") or r.get("Server_id") or 0) for r in replicas)


def _tables(
    cursor: Any, refs: Iterable[TableRef]
) -> tuple[dict[TableRef, TableMetadata | None], set[TableRef]]:
    """Each configured table's metadata (None: it does not exist) and those the account cannot SELECT."""
    tables: dict[TableRef, TableMetadata | None] = {}
    select_denied: set[TableRef] = set()
    for ref in refs:
        tables[ref] = read_table_metadata(cursor, ref)
        try:
            # SELECT * (not SELECT 1): column-level grants on some columns must not pass as table access.
            cursor.execute(f"SELECT * FROM {ref.quoted} LIMIT 0")
            cursor.fetchall()
        except pymysql.MySQLError as error:
            if error.args[0] in (1142, 1143):  # SELECT command denied
                select_denied.add(ref)
            elif error.args[0] != 1146:  # missing tables are reported by the existence check
                raise
    return tables, select_denied
