"""What a binlog ``QueryEvent`` means for a transaction: a boundary, a schema change, or nothing.

Invariant: a statement is classified as harmless only when it provably cannot change the shape or
the rows of a tracked table. Schema-changing statements (ALTER/RENAME/DROP/TRUNCATE TABLE,
CREATE/DROP INDEX, DROP DATABASE) that *name* a tracked table, or whose database holds one, stop
the read. Naming is matched on identifiers, case-insensitively, qualified or resolved against the
event's default schema; a false positive (a column called like a tracked table) stops a read that
could have continued, which is safe, while a false negative would let rows of a new shape through,
which is not. Guarded by ``test_ddl_on_tracked_table_stops_before_anything_after_it`` and
``test_ddl_on_other_tables_only_advances_the_position``.

``CREATE TABLE`` never stops a read: a table that does not exist yet has no rows to reshape. Since
MySQL 8.0.21 ``CREATE TABLE ... SELECT`` is one transaction (``BEGIN``, the ``CREATE ... START
TRANSACTION`` statement, row events, ``XID``): inside a transaction only statement-logged data
changes (``DATA_CHANGE``) mean rows the reader cannot see. Guarded by
``test_create_table_select_from_a_tracked_table_only_advances_the_position``.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from enum import Enum
from typing import Literal

SchemaChangeMode = Literal["evolve", "stop"]
"""What a reader does at DDL on a tracked table: yield it (``evolve``) or raise (``stop``)."""
SCHEMA_CHANGE_MODES: tuple[str, ...] = ("evolve", "stop")

_COMMENT = re.compile(r"/\*.*?\*/|--[^\n]*|#[^\n]*", re.S)
_IDENTIFIER = r"(?:`(?:[^`]|``)+`|[A-Za-z0-9_$]+)"
_NAME = re.compile(rf"({_IDENTIFIER})(?:\s*\.\s*({_IDENTIFIER}))?")
_SCHEMA_CHANGE = re.compile(
    r"^(ALTER\s+(?:ONLINE\s+|IGNORE\s+)?TABLE|RENAME\s+TABLES?|DROP\s+(?:TEMPORARY\s+)?TABLES?|TRUNCATE"
    r"|CREATE\s+(?:UNIQUE\s+|FULLTEXT\s+|SPATIAL\s+)?INDEX|DROP\s+INDEX)\b",
    re.I,
)
_DATA_CHANGE = re.compile(r"^(INSERT|UPDATE|DELETE|REPLACE|LOAD\s+DATA|LOAD\s+XML)\b", re.I)
_IF_EXISTS = re.compile(r"^\s*IF\s+EXISTS\s+", re.I)
_DROP_DATABASE = re.compile(rf"^DROP\s+(?:DATABASE|SCHEMA)\s+(?:IF\s+EXISTS\s+)?({_IDENTIFIER})", re.I)


class StatementKind(Enum):
    BEGIN = "begin"
    COMMIT = "commit"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    XA_OPEN = "xa_open"  # XA START / XA END: inside an XA transaction's body
    XA_FINISH = "xa_finish"  # XA COMMIT / XA ROLLBACK of a prepared transaction: its own GTID
    SCHEMA_CHANGE = "schema_change"
    DATA_CHANGE = "data_change"  # INSERT/UPDATE/DELETE/REPLACE/LOAD: logged as a statement, not rows
    OTHER = "other"


def classify(statement: str) -> StatementKind:
    text = _COMMENT.sub(" ", statement).strip().upper()
    if text == "BEGIN" or text.startswith("START TRANSACTION"):
        return StatementKind.BEGIN
    if text == "COMMIT":
        return StatementKind.COMMIT
    if text.startswith("SAVEPOINT") or text.startswith("ROLLBACK TO") or text.startswith("RELEASE SAVEPOINT"):
        return StatementKind.SAVEPOINT
    if text == "ROLLBACK":
        return StatementKind.ROLLBACK
    if text.startswith("XA START") or text.startswith("XA BEGIN") or text.startswith("XA END"):
        return StatementKind.XA_OPEN
    if text.startswith("XA COMMIT") or text.startswith("XA ROLLBACK"):
        return StatementKind.XA_FINISH
    if _SCHEMA_CHANGE.match(text) or _DROP_DATABASE.match(text):
        return StatementKind.SCHEMA_CHANGE
    if _DATA_CHANGE.match(text):
        return StatementKind.DATA_CHANGE
    return StatementKind.OTHER


def _unquote(identifier: str) -> str:
    if identifier.startswith("`"):
        return identifier[1:-1].replace("``", "`")
    return identifier


def named_tables(statement: str, default_schema: str) -> set[tuple[str, str]]:
    """Every ``(schema, name)`` an identifier in the statement could refer to, lower-cased."""
    text = _COMMENT.sub(" ", statement)
    names: set[tuple[str, str]] = set()
    for first, second in _NAME.findall(text):
        if second:
            names.add((_unquote(first).lower(), _unquote(second).lower()))
        else:
            names.add((default_schema.lower(), _unquote(first).lower()))
    return names


def affected_tracked_tables(
    statement: str, default_schema: str, tracked: Collection[tuple[str, str]] | None
) -> tuple[str, ...]:
    """The tracked tables (``schema.table``) a schema-changing statement may affect; () if none.

    ``tracked=None`` means every table is tracked: any schema change then affects something.
    """
    text = _COMMENT.sub(" ", statement).strip()
    dropped_database = _DROP_DATABASE.match(text)
    if tracked is None:
        if dropped_database:
            return (f"{_unquote(dropped_database.group(1))}.*",)
        return (f"(every table; statement names {_first_table(text, default_schema)})",)
    lowered = {(schema.lower(), table.lower()): f"{schema}.{table}" for schema, table in tracked}
    if dropped_database:
        schema = _unquote(dropped_database.group(1)).lower()
        return tuple(sorted(name for key, name in lowered.items() if key[0] == schema))
    named = named_tables(text, default_schema)
    return tuple(sorted(name for key, name in lowered.items() if key in named))


def _first_table(text: str, default_schema: str) -> str:
    after_keyword = _IF_EXISTS.sub("", _SCHEMA_CHANGE.sub("", text, count=1), count=1)
    match = _NAME.search(after_keyword)
    if not match:
        return "?"
    first, second = match.groups()
    return f"{_unquote(first)}.{_unquote(second)}" if second else f"{default_schema}.{_unquote(first)}"


def mentions_tracked_table(
    statement: str, default_schema: str, tracked: Collection[tuple[str, str]] | None
) -> bool:
    """For statements logged inside a transaction: could this statement have changed tracked rows?"""
    if tracked is None:
        return True
    lowered = {(schema.lower(), table.lower()) for schema, table in tracked}
    return not lowered.isdisjoint(named_tables(statement, default_schema))
