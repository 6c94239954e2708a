"""What a binlog ``QueryEvent`` means for a transaction: a boundary, a schema change, or nothing.

Invariant: a statement is classified as harmless only when it provably cannot change the shape or
the rows of a tracked table. A schema-changing statement (ALTER/RENAME/DROP/TRUNCATE TABLE,
CREATE/DROP INDEX, DROP DATABASE) that names a tracked table, or drops the database holding one,
is a schema change on that table: the reader yields it to the applier (``schema_changes="evolve"``)
or stops with :class:`~.errors.SchemaChangeError` (``"stop"``). Listing a table the statement does
not change is safe (the applier finds nothing to do for it, or the read stops where it could have
gone on); missing one is not, since rows of a new shape would then pass as the old one. Guarded by
``test_ddl_on_tracked_table_stops_before_anything_after_it`` and
``test_ddl_on_other_tables_only_advances_the_position``.

Which tables a schema-changing statement names (:func:`affected_tracked_tables`):

* when :func:`~..mysql.ddl.parse_ddl` reads it with certainty, exactly the tables the
  parse holds: both sides of every rename, every dropped table, an ALTER's table and the one it is
  renamed to. A column or index called like a tracked table is then not taken for it
  (``test_a_column_called_like_a_tracked_table_does_not_stop_a_certain_alter``);
* otherwise (``Unparsed``, or an ALTER with a clause the parse does not know, ``OtherChange``, which
  may name another table: ``EXCHANGE PARTITION p WITH TABLE t2``), every identifier of the text,
  versioned comments' content included, may be a table
  (``test_a_statement_the_parse_cannot_read_still_stops_on_a_tracked_table_it_mentions``).

Either way an unqualified name is in the event's default schema, and names are compared
case-insensitively. A statement-logged data change (``DATA_CHANGE``, which ``parse_ddl`` does not
read) is matched on every identifier by :func:`statement_tracked_tables`.

``CREATE TABLE`` never stops a read: a table that does not exist yet has no rows to reshape. Since
MySQL 8.0.21 ``CREATE TABLE ... SELECT`` is one transaction (``BEGIN``, the ``CREATE ... START
TRANSACTION`` statement, row events, ``XID``): inside a transaction only statement-logged data
changes (``DATA_CHANGE``) mean rows the reader cannot see. Guarded by
``test_create_table_select_from_a_tracked_table_only_advances_the_position``.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from airflow_mysql_cdc.engine.mysql import ddl

if TYPE_CHECKING:
    from airflow_mysql_cdc.engine.mysql.schema import TableRef

_COMMENT = re.compile(r"/\*.*?\*/|--[^\n]*|#[^\n]*", re.S)
_VERSIONED_COMMENT = re.compile(r"/\*!\d*(.*?)\*/", re.S)
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
    """Every ``(schema, name)`` an identifier in the statement could refer to, lower-cased.

    A versioned comment's content (``/*!80013 ... */``) counts: the server may have run it.
    """
    text = _COMMENT.sub(" ", _VERSIONED_COMMENT.sub(r" \1 ", statement))
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
    certain = _certain_names(statement, default_schema)
    dropped_database = certain.database or _dropped_database(statement)
    if tracked is None:
        if dropped_database is not None:
            return (f"{dropped_database}.*",)
        names = ", ".join(map(str, certain.tables or ())) or _first_table(statement, default_schema)
        return (f"(every table; statement names {names})",)
    lowered = {(schema.lower(), table.lower()): f"{schema}.{table}" for schema, table in tracked}
    if dropped_database is not None:
        return tuple(sorted(name for key, name in lowered.items() if key[0] == dropped_database.lower()))
    if certain.tables is None:
        named = named_tables(statement, default_schema)
    else:
        named = {(ref.schema.lower(), ref.table.lower()) for ref in certain.tables}
    return tuple(sorted(name for key, name in lowered.items() if key in named))


@dataclass(frozen=True)
class _CertainNames:
    """What ``parse_ddl`` is certain a statement names: its ``tables`` in statement order, or the
    ``database`` a ``DROP DATABASE`` drops; both None when the parse is not certain."""

    tables: tuple[TableRef, ...] | None = None
    database: str | None = None


def _certain_names(statement: str, default_schema: str) -> _CertainNames:
    """The names in what :func:`~..mysql.ddl.parse_ddl` reads; nothing for ``Unparsed`` and for an
    ALTER holding an ``OtherChange``, since a clause the parse does not know may name another table.
    """
    parsed = ddl.parse_ddl(statement, default_schema)
    if isinstance(parsed, ddl.AlterTable):
        if any(isinstance(action, ddl.OtherChange) for action in parsed.actions):
            return _CertainNames()
        renamed_to = tuple(action.table for action in parsed.actions if isinstance(action, ddl.RenameTo))
        return _CertainNames(tables=(parsed.table, *renamed_to))
    if isinstance(parsed, ddl.RenameTables):
        return _CertainNames(tables=tuple(ref for pair in parsed.pairs for ref in pair))
    if isinstance(parsed, ddl.DropTables):
        return _CertainNames(tables=parsed.tables)
    if isinstance(parsed, ddl.TruncateTable | ddl.CreateTable | ddl.IndexChange):
        return _CertainNames(tables=(parsed.table,))
    if isinstance(parsed, ddl.DropDatabase):
        return _CertainNames(database=parsed.schema)
    return _CertainNames()


def _dropped_database(statement: str) -> str | None:
    """The database a ``DROP DATABASE`` the parse could not read drops, by the regex."""
    match = _DROP_DATABASE.match(_COMMENT.sub(" ", statement).strip())
    return _unquote(match.group(1)) if match else None


def _first_table(statement: str, default_schema: str) -> str:
    text = _COMMENT.sub(" ", statement).strip()
    after_keyword = _IF_EXISTS.sub("", _SCHEMA_CHANGE.sub("", text, count=1), count=1)
    match = _NAME.search(after_keyword)
    if not match:
        return "?"
    first, second = match.groups()
    return f"{_unquote(first)}.{_unquote(second)}" if second else f"{default_schema}.{_unquote(first)}"


def statement_tracked_tables(
    statement: str, default_schema: str, tracked: Collection[tuple[str, str]] | None
) -> tuple[str, ...]:
    """For a statement-logged data change: the tracked tables (``schema.table``) it may have changed.

    Every identifier of the text counts (the target of an ``INSERT ... SELECT`` and the tables it
    reads alike): naming a table the statement only read costs a needless stop or re-snapshot,
    missing one would be a silent gap. ``tracked=None`` means every table is tracked.
    """
    named = named_tables(statement, default_schema)
    if tracked is None:
        return (f"(every table; statement names {', '.join(sorted(f'{s}.{t}' for s, t in named))})",)
    lowered = {(schema.lower(), table.lower()): f"{schema}.{table}" for schema, table in tracked}
    return tuple(sorted(name for key, name in lowered.items() if key in named))
