"""What a MySQL server says about its binlog and GTID progress, read the same way on 8.0, 8.4 and 9.x.

``SHOW MASTER STATUS`` was removed in 8.4 and replaced by ``SHOW BINARY LOG STATUS`` (which 8.0
does not know before 8.0.22): we try the new statement first and fall back, so callers never
branch on the version.
"""

from __future__ import annotations

from dataclasses import dataclass

import pymysql

from airflow_mysql_cdc.engine.values.gtid import GtidSet

_UNKNOWN_STATEMENT_ERRORS = (1064, 1295)  # syntax error; statement not supported by the server


@dataclass(frozen=True)
class BinaryLogStatus:
    file: str
    position: int
    executed: GtidSet


@dataclass(frozen=True)
class ServerState:
    version: str
    flavor: str
    server_uuid: str
    server_id: int
    gtid_executed: GtidSet
    gtid_purged: GtidSet
    binary_log: BinaryLogStatus | None


def read_binary_log_status(cursor: pymysql.cursors.Cursor) -> BinaryLogStatus | None:
    """The current binlog file, position and executed set; None when binary logging is off."""
    for statement in ("SHOW BINARY LOG STATUS", "SHOW MASTER STATUS"):
        try:
            cursor.execute(statement)
        except pymysql.err.ProgrammingError as error:
            if error.args[0] in _UNKNOWN_STATEMENT_ERRORS:
                continue
            raise
        row = cursor.fetchone()
        if row is None:
            return None
        columns = [description[0] for description in cursor.description]
        values = dict(zip(columns, row, strict=True))
        return BinaryLogStatus(
            file=values["File"],
            position=int(values["Position"]),
            executed=GtidSet.parse(values.get("Executed_Gtid_Set") or ""),
        )
    raise RuntimeError("the server accepts neither SHOW BINARY LOG STATUS nor SHOW MASTER STATUS")


def read_server_state(connection: pymysql.connections.Connection) -> ServerState:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT @@version, @@version_comment, @@server_uuid, @@server_id,"
            " @@GLOBAL.gtid_executed, @@GLOBAL.gtid_purged"
        )
        version, comment, server_uuid, server_id, executed, purged = cursor.fetchone()
        binary_log = read_binary_log_status(cursor)
    flavor = "mariadb" if "mariadb" in f"{version} {comment}".lower() else "mysql"
    return ServerState(
        version=version,
        flavor=flavor,
        server_uuid=server_uuid,
        server_id=int(server_id),
        gtid_executed=GtidSet.parse(executed),
        gtid_purged=GtidSet.parse(purged),
        binary_log=binary_log,
    )
