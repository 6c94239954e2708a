"""The clauses of an ``ALTER TABLE``: what each does to the table's rows and columns.

Invariant: every clause becomes exactly one action, or two for a column with ``UNIQUE``
(:class:`AddColumn` and :class:`IndexOnly`), or one per column of ``ADD (a INT, b INT)``; a clause
not recognised with certainty, or known to rewrite rows (``CONVERT TO CHARACTER SET``, partition
changes, another ``ENGINE``), is :class:`OtherChange`, on which the engine re-snapshots the table.
Only the clause is given up, never its neighbours: ``ADD COLUMN c INT, ORDER BY c`` is an
:class:`AddColumn` and an :class:`OtherChange`. The statement around the clauses is :mod:`.statements`.

Decisions:

* ``ENGINE=InnoDB`` (a rebuild) is a :class:`TableOption`; any other engine is an
  :class:`OtherChange` (``BLACKHOLE`` discards every row).
* A clause adding, dropping or renaming a unique key says so in ``may_change_row_key``: such a key
  may be the one a table without primary key is merged by (:mod:`..schema`).
* A dropped index or constraint named ``PRIMARY`` is a :class:`PrimaryKeyChange`.

Guarded by the ``test_alter_*`` tests in ``tests/unit/test_mysql_ddl.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_mysql_cdc.engine.mysql.ddl.column_definitions import read_column_definition
from airflow_mysql_cdc.engine.mysql.ddl.defaults import (
    ColumnDefault,
    NoDefault,
    column_default,
    implicit_default,
)
from airflow_mysql_cdc.engine.mysql.ddl.lexer import (
    Token,
    TokenCursor,
    UnrecognisedStatement,
    split_top_level,
)
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.types import ColumnType


@dataclass(frozen=True)
class AddColumn:
    """``ADD [COLUMN]``: a new column; ``position`` is ``FIRST``, ``AFTER <name>`` or None.

    ``default`` is what the DEFAULT clause gave existing rows, :class:`~.defaults.NoDefault`
    without one; :attr:`existing_rows_default` resolves that. A ``TIMESTAMP`` without ``NULL`` or
    ``NOT NULL`` reads as nullable, but its default is never a literal, so the engine re-snapshots.
    """

    name: str
    column_type: ColumnType
    nullable: bool
    default: ColumnDefault
    position: str | None

    @property
    def existing_rows_default(self) -> ColumnDefault:
        """The value every pre-existing row holds: a literal, or an expression (re-snapshot)."""
        if isinstance(self.default, NoDefault):
            return implicit_default(self.column_type, self.nullable)
        return self.default


@dataclass(frozen=True)
class DropColumn:
    """``DROP [COLUMN]``: existing rows lose the column (it may have been part of the row key)."""

    name: str


@dataclass(frozen=True)
class RenameColumn:
    """``RENAME COLUMN old TO new``: values unchanged."""

    old: str
    new: str


@dataclass(frozen=True)
class ModifyColumn:
    """``MODIFY [COLUMN]``: the type or attributes change, values may be converted (re-snapshot)."""

    name: str
    text: str


@dataclass(frozen=True)
class ChangeColumn:
    """``CHANGE [COLUMN] old new definition``: a rename and a MODIFY (re-snapshot)."""

    old: str
    new: str
    text: str


@dataclass(frozen=True)
class IndexOnly:
    """An index or constraint change: no row changes. ``may_change_row_key`` when a unique key is
    added, dropped or renamed (it may be the key a table without primary key is merged by)."""

    text: str
    may_change_row_key: bool


@dataclass(frozen=True)
class PrimaryKeyChange:
    """``ADD``/``DROP PRIMARY KEY`` (or a constraint or index named ``PRIMARY``): the row key changes."""

    text: str


@dataclass(frozen=True)
class DefaultChange:
    """``ALTER [COLUMN] c SET DEFAULT ...|DROP DEFAULT``: future inserts only, no existing row changes."""

    name: str


@dataclass(frozen=True)
class TableOption:
    """A table option that changes no row nor column: ``ENGINE=InnoDB``, ``COMMENT``, ``ROW_FORMAT``,
    ``AUTO_INCREMENT``, the default character set of *future* columns, ``ALGORITHM``, ``LOCK``, ..."""

    text: str


@dataclass(frozen=True)
class RenameTo:
    """``RENAME [TO|AS] new`` inside an ALTER with other clauses (alone it is :class:`RenameTables`)."""

    table: TableRef


@dataclass(frozen=True)
class OtherChange:
    """A clause not recognised with certainty (or known to rewrite rows): the engine re-snapshots."""

    text: str
    reason: str = ""


AlterAction = (
    AddColumn
    | DropColumn
    | RenameColumn
    | ModifyColumn
    | ChangeColumn
    | IndexOnly
    | PrimaryKeyChange
    | DefaultChange
    | TableOption
    | RenameTo
    | OtherChange
)


def read_table_ref(cursor: TokenCursor, default_schema: str) -> TableRef:
    """``name`` or ``schema.name``, as written; an unqualified name is in ``default_schema``."""
    first = cursor.expect_identifier()
    if cursor.accept_punct("."):
        return TableRef(first, cursor.expect_identifier())
    return TableRef(default_schema, first)


def read_alter_clauses(tokens: list[Token], statement: str, default_schema: str) -> tuple[AlterAction, ...]:
    """The actions of the clauses in ``tokens`` (everything after the table's name), in order."""
    clauses = split_top_level(tokens) if tokens else []
    if any(not clause for clause in clauses):
        raise UnrecognisedStatement("an empty ALTER TABLE clause")
    return tuple(action for clause in clauses for action in _alter_clause(clause, statement, default_schema))


def _alter_clause(clause: list[Token], statement: str, default_schema: str) -> list[AlterAction]:
    text = statement[clause[0].start : clause[-1].end]
    try:
        return _read_alter_clause(TokenCursor(clause), text, statement, default_schema)
    except UnrecognisedStatement as unrecognised:
        return [OtherChange(text, str(unrecognised))]


def _read_alter_clause(
    cursor: TokenCursor, text: str, statement: str, default_schema: str
) -> list[AlterAction]:
    if cursor.accept_keyword("ADD"):
        return _add(cursor, text, statement)
    if cursor.accept_keyword("DROP"):
        return [_drop_clause(cursor, text)]
    if cursor.accept_keyword("ALTER"):
        return [_alter_clause_alter(cursor, text)]
    if cursor.accept_keyword("CHANGE"):
        cursor.accept_keyword("COLUMN")
        old, new = cursor.expect_identifier(), cursor.expect_identifier()
        cursor.next()  # a definition follows; MySQL checked it, the engine re-snapshots
        return [ChangeColumn(old, new, text)]
    if cursor.accept_keyword("MODIFY"):
        cursor.accept_keyword("COLUMN")
        name = cursor.expect_identifier()
        cursor.next()
        return [ModifyColumn(name, text)]
    if cursor.accept_keyword("RENAME"):
        return [_rename_clause(cursor, text, default_schema)]
    if cursor.accept_keyword("CONVERT"):
        raise UnrecognisedStatement("CONVERT TO CHARACTER SET re-encodes every text column")
    read_table_options(cursor, allowed=None)
    return [TableOption(text)]


_INDEX_KEYWORDS = ("INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK")


def _add(cursor: TokenCursor, text: str, statement: str) -> list[AlterAction]:
    column_keyword = cursor.accept_keyword("COLUMN") is not None
    following = cursor.peek()
    if following is not None and following.is_punct("("):
        start = cursor.position
        cursor.skip_parenthesised()
        cursor.expect_end()
        elements = split_top_level(cursor.tokens[start + 1 : -1])
        return [action for element in elements for action in _add_element(element, text, statement)]
    if column_keyword:
        return _add_column(cursor, text, statement, allow_position=True)
    return _add_element(cursor.tokens[cursor.position :], text, statement, allow_position=True)


def _add_element(
    tokens: list[Token], text: str, statement: str, *, allow_position: bool = False
) -> list[AlterAction]:
    cursor = TokenCursor(tokens)
    if cursor.accept_keyword("CONSTRAINT"):
        symbol = cursor.peek()
        if symbol is not None and not symbol.is_keyword("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
            cursor.expect_identifier()
    if cursor.accept_keywords("PRIMARY", "KEY"):
        return [PrimaryKeyChange(text)]
    if cursor.accept_keyword("UNIQUE"):
        return [IndexOnly(text, may_change_row_key=True)]
    if cursor.accept_keyword(*_INDEX_KEYWORDS):
        return [IndexOnly(text, may_change_row_key=False)]
    if cursor.position:
        raise UnrecognisedStatement(f"a constraint of an unknown kind {cursor.describe_position()}")
    if cursor.accept_keyword("PARTITION"):
        raise UnrecognisedStatement("a partition change")
    return _add_column(cursor, text, statement, allow_position=allow_position)


def _add_column(cursor: TokenCursor, text: str, statement: str, *, allow_position: bool) -> list[AlterAction]:
    definition = read_column_definition(cursor, statement, allow_position=allow_position)
    added: list[AlterAction] = [
        AddColumn(
            name=definition.name,
            column_type=definition.declared.column_type,
            nullable=definition.nullable,
            default=column_default(definition),
            position=definition.position,
        )
    ]
    if definition.unique:
        added.append(IndexOnly(text, may_change_row_key=True))
    return added


def _drop_clause(cursor: TokenCursor, text: str) -> AlterAction:
    if cursor.accept_keywords("PRIMARY", "KEY"):
        action: AlterAction = PrimaryKeyChange(text)
    elif cursor.accept_keyword("INDEX", "KEY", "CONSTRAINT"):
        is_primary = cursor.expect_identifier().upper() == "PRIMARY"
        action = PrimaryKeyChange(text) if is_primary else IndexOnly(text, may_change_row_key=True)
    elif cursor.accept_keywords("FOREIGN", "KEY") or cursor.accept_keyword("CHECK"):
        cursor.expect_identifier()
        action = IndexOnly(text, may_change_row_key=False)
    elif cursor.accept_keyword("PARTITION"):
        raise UnrecognisedStatement("DROP PARTITION deletes the partition's rows")
    else:
        cursor.accept_keyword("COLUMN")
        action = DropColumn(cursor.expect_identifier(refused=_REFUSED_COLUMN_NAMES))
        cursor.accept_keyword("RESTRICT", "CASCADE")
    cursor.expect_end()
    return action


_REFUSED_COLUMN_NAMES = frozenset(("IF", "PRIMARY", "FOREIGN", "CHECK", "PARTITION", "DEFAULT"))


def _alter_clause_alter(cursor: TokenCursor, text: str) -> AlterAction:
    if cursor.accept_keyword("INDEX"):
        cursor.expect_identifier()
        cursor.expect_keyword("VISIBLE", "INVISIBLE")
    elif cursor.accept_keyword("CHECK", "CONSTRAINT"):
        cursor.expect_identifier()
        cursor.accept_keyword("NOT")
        cursor.expect_keyword("ENFORCED")
    else:
        cursor.accept_keyword("COLUMN")
        name = cursor.expect_identifier(refused=_REFUSED_COLUMN_NAMES)
        if cursor.accept_keywords("DROP", "DEFAULT"):
            cursor.expect_end()
        else:
            cursor.expect_keyword("SET")
            cursor.expect_keyword("DEFAULT")
            cursor.next()  # the new default; it applies to future inserts only
        return DefaultChange(name)
    cursor.expect_end()
    return IndexOnly(text, may_change_row_key=False)


def _rename_clause(cursor: TokenCursor, text: str, default_schema: str) -> AlterAction:
    if cursor.accept_keyword("COLUMN"):
        old = cursor.expect_identifier()
        cursor.expect_keyword("TO")
        action: AlterAction = RenameColumn(old, cursor.expect_identifier())
    elif cursor.accept_keyword("INDEX", "KEY"):
        cursor.expect_identifier()
        cursor.expect_keyword("TO")
        cursor.expect_identifier()
        action = IndexOnly(text, may_change_row_key=True)
    else:
        cursor.accept_keyword("TO", "AS")
        action = RenameTo(read_table_ref(cursor, default_schema))
    cursor.expect_end()
    return action


_VALUE_OPTIONS = frozenset(
    ("COMMENT", "ROW_FORMAT", "AUTO_INCREMENT", "KEY_BLOCK_SIZE", "STATS_PERSISTENT", "STATS_AUTO_RECALC")
    + ("STATS_SAMPLE_PAGES", "AVG_ROW_LENGTH", "MAX_ROWS", "MIN_ROWS", "CHECKSUM", "COMPRESSION")
    + ("ENCRYPTION", "PACK_KEYS", "DELAY_KEY_WRITE", "AUTOEXTEND_SIZE", "ENGINE_ATTRIBUTE")
    + ("SECONDARY_ENGINE_ATTRIBUTE", "ALGORITHM", "LOCK")
)


def read_table_options(cursor: TokenCursor, *, allowed: frozenset[str] | None) -> None:
    """Table options (separated by spaces or nothing) up to the end; raises on any other text.

    ``allowed`` limits the options (``DROP INDEX`` takes only ALGORITHM and LOCK); None allows
    every option that changes no row nor column.
    """
    while not cursor.at_end():
        token = cursor.next()
        option = token.value.upper() if token.kind == "word" else ""
        if allowed is not None and option not in allowed:
            raise UnrecognisedStatement(f"unexpected text ({token.value!r} at offset {token.start})")
        if option == "FORCE":
            continue
        if option == "ENGINE":
            cursor.accept_punct("=")
            engine = cursor.expect_identifier()
            if engine.upper() != "INNODB":
                raise UnrecognisedStatement(f"ENGINE={engine} may keep, convert or discard the rows")
            continue
        if option == "DEFAULT":
            option = cursor.expect_keyword("CHARACTER", "CHARSET", "COLLATE")
        if option == "CHARACTER":
            cursor.expect_keyword("SET")
        elif option not in ("CHARSET", "COLLATE") and option not in _VALUE_OPTIONS:
            raise UnrecognisedStatement(f"a table option not known to change no row ({token.value!r})")
        cursor.accept_punct("=")
        value = cursor.next()
        if value.kind not in ("word", "name", "string", "number"):
            raise UnrecognisedStatement(f"unexpected option value at offset {value.start}")
