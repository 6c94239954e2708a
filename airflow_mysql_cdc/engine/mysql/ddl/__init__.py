"""The DDL reader: what a statement from the binlog does to tables, certain or ``Unparsed``.

Reading order:
1. ``lexer``: the statement's text as MySQL's lexer sees it (tokens, comments dropped, versioned
   comments kept); anything the DDL session's settings could make the server read otherwise
   (``NO_BACKSLASH_ESCAPES``, a newer versioned comment) is refused.
2. ``statements``: :func:`~.statements.parse_ddl` and what it returns, the :data:`~.statements.Ddl`
   union: ``AlterTable``, ``RenameTables``, ``TruncateTable``, ``DropTables``, ``DropDatabase``,
   ``CreateTable``, ``IndexChange``, or ``Unparsed`` with the reason.
3. ``alter_clauses``: one action per clause of an ``ALTER TABLE`` (``AddColumn``, ``DropColumn``,
   ``RenameTo``, ... or ``OtherChange``), read one by one so an unknown clause never hides its
   neighbours.
4. ``column_definitions``: an added column's definition read into the engine's
   :class:`~..types.ColumnType` (the one the binlog's table map and ``information_schema`` give).
5. ``defaults``: the value an added column gave the rows that already existed: a literal in its
   canonical form (:mod:`..normalise`), or an expression the engine does not compute.

Invariant of the folder: the reader describes a statement only as far as it is certain of it;
anything else is ``Unparsed`` (a statement) or ``OtherChange`` (a clause), and on both the engine
re-snapshots the table, which is always correct. A wrong description could let the lake drift from
the source, so no module here guesses: an unknown token raises
:class:`~.lexer.UnrecognisedStatement`, which :func:`~.statements.parse_ddl` turns into ``Unparsed``.

The door: this ``__init__`` re-exports ``parse_ddl``, every type it returns, the clause types and the
default kinds (``__all__``). Callers (``apply/schema_decisions``, ``apply/schema_changes``,
``binlog/statements``) import from ``engine.mysql.ddl``, never from its modules, so a module can be
split without moving them.

Guarded by ``tests/unit/test_mysql_ddl.py`` (statements, clauses, the ``test_lexer_*`` tests),
``tests/unit/test_mysql_ddl_defaults.py`` (column types and existing rows' values) and, against
MySQL itself, ``tests/integration/test_mysql_ddl_parity.py``
(``test_added_columns_have_the_type_and_existing_row_values_the_parser_reads``).

Imports: errors and, in ``mysql``, ``schema``, ``types`` and ``normalise``; never binlog, lake,
snapshot or apply. No module of ``mysql`` outside this folder imports it.
"""

from __future__ import annotations

from airflow_mysql_cdc.engine.mysql.ddl.alter_clauses import (
    AddColumn,
    AlterAction,
    ChangeColumn,
    DefaultChange,
    DropColumn,
    IndexOnly,
    ModifyColumn,
    OtherChange,
    PrimaryKeyChange,
    RenameColumn,
    RenameTo,
    TableOption,
)
from airflow_mysql_cdc.engine.mysql.ddl.defaults import (
    ColumnDefault,
    ExpressionDefault,
    LiteralDefault,
    NoDefault,
    implicit_default,
)
from airflow_mysql_cdc.engine.mysql.ddl.statements import (
    AlterTable,
    CreateTable,
    Ddl,
    DropDatabase,
    DropTables,
    IndexChange,
    RenameTables,
    TruncateTable,
    Unparsed,
    parse_ddl,
)

__all__ = [
    "AddColumn",
    "AlterAction",
    "AlterTable",
    "ChangeColumn",
    "ColumnDefault",
    "CreateTable",
    "Ddl",
    "DefaultChange",
    "DropColumn",
    "DropDatabase",
    "DropTables",
    "ExpressionDefault",
    "IndexChange",
    "IndexOnly",
    "LiteralDefault",
    "ModifyColumn",
    "NoDefault",
    "OtherChange",
    "PrimaryKeyChange",
    "RenameColumn",
    "RenameTables",
    "RenameTo",
    "TableOption",
    "TruncateTable",
    "Unparsed",
    "implicit_default",
    "parse_ddl",
]
