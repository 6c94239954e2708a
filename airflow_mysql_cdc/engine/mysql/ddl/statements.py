"""What a DDL statement from the binlog does to tables: which statement it is, and what an ALTER changes.

Invariant: :func:`parse_ddl` describes a statement only as far as it is certain of it. A statement
it does not recognise with certainty is :class:`Unparsed`; a clause of an ``ALTER TABLE`` it does
not recognise is :class:`OtherChange`. On both the engine re-snapshots the table, which is always
correct; a wrong description could let the lake drift from the source, so the parser never
guesses. The binlog's table map decides column identity; this parser supplies what the map cannot:
which statement ran, which columns an ALTER adds or drops, and the value an added column gave the
rows that already existed (:mod:`.defaults`).

The statement is the text MySQL logged (a ``QueryEvent``): the original text, comments included,
with ``default_schema`` the event's current database. Comments are ignored except versioned ones
(``/*!80013 ... */``), whose content the server ran (:mod:`.lexer`). Keywords are
case-insensitive; identifiers keep the case they are written in. An ``ALTER TABLE``'s clauses are
split at top-level commas (never inside parentheses or quotes) and read one by one.

Decisions:

* ``ALTER TABLE a RENAME [TO|AS] b`` alone is :class:`RenameTables`, like ``RENAME TABLE a TO b``:
  one shape for every rename (gh-ost and pt-osc swap tables with ``RENAME TABLE``). Together with
  other clauses it is a :class:`RenameTo` action of the :class:`AlterTable`.
* ``CREATE UNIQUE INDEX`` and ``DROP INDEX`` say ``may_change_row_key``: the key may be the one a
  table without primary key is merged by (:mod:`..schema`).

The clauses of an ALTER, and the decisions about them, are :mod:`.alter_clauses`. Callers import
``parse_ddl`` and everything it returns from the package (``engine.mysql.ddl``), one place.

Guarded by ``tests/unit/test_mysql_ddl.py``, ``tests/unit/test_mysql_ddl_defaults.py`` and
``tests/integration/test_mysql_ddl_parity.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_mysql_cdc.engine.mysql.ddl.alter_clauses import (
    AlterAction,
    RenameTo,
    read_alter_clauses,
    read_table_options,
    read_table_ref,
)
from airflow_mysql_cdc.engine.mysql.ddl.lexer import TokenCursor, UnrecognisedStatement, tokenize
from airflow_mysql_cdc.engine.mysql.schema import TableRef


@dataclass(frozen=True)
class AlterTable:
    """``ALTER TABLE``: its clauses in statement order (an empty ALTER has none)."""

    table: TableRef
    actions: tuple[AlterAction, ...]


@dataclass(frozen=True)
class RenameTables:
    """``RENAME TABLE a TO b, c TO d`` in order (each rename sees the ones before it), or an
    ``ALTER TABLE a RENAME TO b`` with no other clause."""

    pairs: tuple[tuple[TableRef, TableRef], ...]


@dataclass(frozen=True)
class TruncateTable:
    table: TableRef


@dataclass(frozen=True)
class DropTables:
    """``DROP [TEMPORARY] TABLE [IF EXISTS] ...``: a TEMPORARY table is never a tracked one."""

    tables: tuple[TableRef, ...]
    temporary: bool


@dataclass(frozen=True)
class DropDatabase:
    schema: str


@dataclass(frozen=True)
class CreateTable:
    """``CREATE [TEMPORARY] TABLE`` in any form (columns, ``LIKE``, ``SELECT``): a new table."""

    table: TableRef
    temporary: bool = False


@dataclass(frozen=True)
class IndexChange:
    """``CREATE [UNIQUE|FULLTEXT|SPATIAL] INDEX ... ON t`` or ``DROP INDEX ... ON t``; see
    :class:`IndexOnly` for ``may_change_row_key``."""

    table: TableRef
    may_change_row_key: bool


@dataclass(frozen=True)
class Unparsed:
    """Not recognised with certainty; ``reason`` says where and why. The engine re-snapshots."""

    reason: str


Ddl = (
    AlterTable
    | RenameTables
    | TruncateTable
    | DropTables
    | DropDatabase
    | CreateTable
    | IndexChange
    | Unparsed
)


def parse_ddl(statement: str, default_schema: str) -> Ddl:
    """What ``statement`` does, with unqualified table names in ``default_schema``; never raises."""
    try:
        tokens = tokenize(statement)
        while tokens and tokens[-1].is_punct(";"):
            tokens.pop()
        return _statement(TokenCursor(tokens), statement, default_schema)
    except UnrecognisedStatement as unrecognised:
        return Unparsed(str(unrecognised))


def _statement(cursor: TokenCursor, statement: str, default_schema: str) -> Ddl:
    if cursor.accept_keyword("ALTER"):
        cursor.expect_keyword("TABLE")
        return _alter_table(cursor, statement, default_schema)
    if cursor.accept_keyword("RENAME"):
        cursor.expect_keyword("TABLE", "TABLES")
        pairs = []
        while True:
            old = read_table_ref(cursor, default_schema)
            cursor.expect_keyword("TO")
            pairs.append((old, read_table_ref(cursor, default_schema)))
            if not cursor.accept_punct(","):
                break
        cursor.expect_end()
        return RenameTables(tuple(pairs))
    if cursor.accept_keyword("TRUNCATE"):
        cursor.accept_keyword("TABLE")
        table = read_table_ref(cursor, default_schema)
        cursor.expect_end()
        return TruncateTable(table)
    if cursor.accept_keyword("DROP"):
        return _drop(cursor, default_schema)
    if cursor.accept_keyword("CREATE"):
        return _create(cursor, default_schema)
    raise UnrecognisedStatement(f"not a statement on tables {cursor.describe_position()}")


def _drop(cursor: TokenCursor, default_schema: str) -> Ddl:
    temporary = cursor.accept_keyword("TEMPORARY") is not None
    if cursor.accept_keyword("TABLE", "TABLES"):
        cursor.accept_keywords("IF", "EXISTS")
        tables = [read_table_ref(cursor, default_schema)]
        while cursor.accept_punct(","):
            tables.append(read_table_ref(cursor, default_schema))
        cursor.accept_keyword("RESTRICT", "CASCADE")
        cursor.expect_end()
        return DropTables(tuple(tables), temporary)
    if not temporary and cursor.accept_keyword("DATABASE", "SCHEMA"):
        cursor.accept_keywords("IF", "EXISTS")
        schema = cursor.expect_identifier()
        cursor.expect_end()
        return DropDatabase(schema)
    if not temporary and cursor.accept_keyword("INDEX"):
        cursor.expect_identifier()
        cursor.expect_keyword("ON")
        table = read_table_ref(cursor, default_schema)
        read_table_options(cursor, allowed=frozenset(("ALGORITHM", "LOCK")))
        return IndexChange(table, may_change_row_key=True)
    raise UnrecognisedStatement(
        f"a DROP of something other than tables or an index {cursor.describe_position()}"
    )


def _create(cursor: TokenCursor, default_schema: str) -> Ddl:
    temporary = cursor.accept_keyword("TEMPORARY") is not None
    if cursor.accept_keyword("TABLE"):
        cursor.accept_keywords("IF", "NOT", "EXISTS")
        return CreateTable(read_table_ref(cursor, default_schema), temporary)
    if not temporary:
        unique = cursor.accept_keyword("UNIQUE") is not None
        if not unique:
            cursor.accept_keyword("FULLTEXT", "SPATIAL")
        if cursor.accept_keyword("INDEX"):
            cursor.expect_identifier()
            if cursor.accept_keyword("USING"):
                cursor.expect_keyword("BTREE", "HASH")
            cursor.expect_keyword("ON")
            return IndexChange(read_table_ref(cursor, default_schema), may_change_row_key=unique)
    raise UnrecognisedStatement(
        f"a CREATE of something other than a table or an index {cursor.describe_position()}"
    )


def _alter_table(cursor: TokenCursor, statement: str, default_schema: str) -> Ddl:
    table = read_table_ref(cursor, default_schema)
    actions = read_alter_clauses(cursor.tokens[cursor.position :], statement, default_schema)
    if len(actions) == 1 and isinstance(actions[0], RenameTo):
        return RenameTables(((table, actions[0].table),))
    return AlterTable(table, actions)
