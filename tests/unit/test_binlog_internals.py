"""The private parts of mysql-replication and PyMySQL we rely on exist, and only one module uses them."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from pymysql.protocol import MysqlPacket
from pymysqlreplication.event import QueryEvent
from pymysqlreplication.packet import BinLogPacketWrapper

import airflow_mysql_cdc.engine as engine
from airflow_mysql_cdc.engine.binlog.internals import (
    PRIVATE_PARTS,
    missing_private_parts,
    tolerate_unknown_query_status_variables,
)

_PRIVATE_ACCESS = re.compile(r"_BinLog\w+__|\._(ctl_connection|read_packet|data|position)\b")


def test_the_private_parts_we_use_exist_in_the_installed_libraries() -> None:
    assert missing_private_parts() == [], (
        "an upgrade of mysql-replication or PyMySQL moved a private part the engine reaches "
        "(engine/binlog/internals.py): adapt that module before using the new version"
    )
    assert len(PRIVATE_PARTS) >= 5


def test_no_other_engine_module_reaches_into_the_libraries() -> None:
    root = Path(engine.__file__).parent
    users = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.name != "internals.py" and _PRIVATE_ACCESS.search(path.read_text())
    ]
    assert users == []


class _ControlConnection:
    charset = "utf8mb4"

    def _get_dbms(self) -> str:
        return "mysql"


def _query_event(status_variables: bytes, schema: bytes, statement: bytes) -> BinLogPacketWrapper:
    """A QUERY_EVENT as the server sends it (OK byte, 19-byte header, post-header, body), decoded."""
    post_header = struct.pack("<IIBHH", 7, 0, len(schema), 0, len(status_variables))
    body = post_header + status_variables + schema + b"\x00" + statement
    header = struct.pack("<IBIIIH", 0, 2, 1, 19 + len(body), 0, 0)
    return BinLogPacketWrapper(
        MysqlPacket(b"\x00" + header + body, "utf8"), {}, _ControlConnection(), (9, 7, 0), False,
        frozenset({QueryEvent}), None, None, None, None, True, False, False, False, False,
    )  # fmt: skip


def test_a_query_event_with_an_unknown_status_variable_keeps_its_schema_and_statement() -> None:
    tolerate_unknown_query_status_variables()
    flags2 = b"\x00" + struct.pack("<I", 0)
    unknown = b"\x15" + b"\x01\x02\x03"  # code 21, as MySQL 9.7 logs a statement, then bytes we skip
    event = _query_event(flags2 + unknown, b"shop", b"UPDATE orders SET total = 0").event

    assert (event.schema, event.query) == (b"shop", "UPDATE orders SET total = 0")
    assert event.flags2 == 0


def test_a_query_event_with_known_status_variables_parses_as_the_library_does() -> None:
    tolerate_unknown_query_status_variables()
    sql_mode = b"\x01" + struct.pack("<Q", 5)
    event = _query_event(sql_mode, b"", b"BEGIN").event

    assert (event.schema, event.query, event.sql_mode) == (b"", "BEGIN", 5)
