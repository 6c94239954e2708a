"""What a DDL statement of the binlog does, read conservatively: recognised with certainty, or ``Unparsed``.

Invariant: a statement or an ``ALTER TABLE`` clause is given a meaning only when its grammar is
recognised completely; anything else becomes :class:`Unparsed` or :class:`OtherChange`, which the
engine answers with a comparison of columns or a re-snapshot, never a guess. The statement is the
text MySQL logged (the original statement; comments kept, versioned comments ``/*!80013 ... */``
part of it). Column identity is decided later from the binlog's own table maps; what only the
statement can say is which DDL it is and the DEFAULT that MySQL gave existing rows for an added
column (:mod:`.ddl_defaults`). Guarded by tests/unit/mysql/test_ddl.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_mysql_cdc.engine.mysql.ddl_defaults import (
    ColumnDefault,
    ExpressionDefault,
    LiteralDefault,
    NoDefault,
    default_value,
    implicit_default,
)
from airflow_mysql_cdc.engine.mysql.ddl_tokens import Token, split_top_level, tokenize
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.types import ColumnType

__all__ = [
    "AddColumn", "AlterTable", "ChangeColumn", "ColumnDefault", "CreateTable", "DefaultChange", "DropColumn",
    "DropDatabase", "DropTables", "ExpressionDefault", "IndexChange", "IndexOnly", "LiteralDefault",
    "ModifyColumn", "NoDefault", "OtherChange", "PrimaryKeyChange", "RenameColumn", "RenameTables",
    "RenameTo", "TableOption", "TruncateTable", "Unparsed", "implicit_default", "parse_ddl",
]  # fmt: skip


# --- what a statement is -------------------------------------------------------------------------


@dataclass(frozen=True)
class AddColumn:
    name: str
    column_type: ColumnType
    nullable: bool
    default: ColumnDefault
    position: str | None = None  # "FIRST", "AFTER x" or None (last)


@dataclass(frozen=True)
class DropColumn:
    name: str


@dataclass(frozen=True)
class RenameColumn:
    old: str
    new: str


@dataclass(frozen=True)
class ModifyColumn:
    name: str
    text: str


@dataclass(frozen=True)
class ChangeColumn:
    old: str
    new: str
    text: str


@dataclass(frozen=True)
class IndexOnly:
    text: str


@dataclass(frozen=True)
class PrimaryKeyChange:
    text: str


@dataclass(frozen=True)
class DefaultChange:
    name: str


@dataclass(frozen=True)
class TableOption:
    text: str


@dataclass(frozen=True)
class RenameTo:
    new: TableRef


@dataclass(frozen=True)
class OtherChange:
    text: str


AlterAction = (
    AddColumn | DropColumn | RenameColumn | ModifyColumn | ChangeColumn | IndexOnly | PrimaryKeyChange
    | DefaultChange | TableOption | RenameTo | OtherChange
)  # fmt: skip


@dataclass(frozen=True)
class AlterTable:
    table: TableRef
    actions: tuple[AlterAction, ...]


@dataclass(frozen=True)
class RenameTables:
    pairs: tuple[tuple[TableRef, TableRef], ...]


@dataclass(frozen=True)
class TruncateTable:
    table: TableRef


@dataclass(frozen=True)
class DropTables:
    tables: tuple[TableRef, ...]
    temporary: bool = False


@dataclass(frozen=True)
class DropDatabase:
    schema: str


@dataclass(frozen=True)
class CreateTable:
    table: TableRef


@dataclass(frozen=True)
class IndexChange:
    table: TableRef


@dataclass(frozen=True)
class Unparsed:
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


# --- statements ----------------------------------------------------------------------------------


def parse_ddl(statement: str, default_schema: str) -> Ddl:
    """What ``statement`` does; unqualified names are in ``default_schema`` (the event's database)."""
    try:
        tokens = tokenize(statement)
        return _Statement(tokens, default_schema).parse()
    except (ValueError, IndexError) as error:
        return Unparsed(str(error) or "not recognised")


class _Statement:
    def __init__(self, tokens: list[Token], default_schema: str) -> None:
        self.tokens = [t for t in tokens if t.text != ";"]
        self.at = 0
        self.default_schema = default_schema

    def peek(self, *words: str) -> bool:
        return self.at < len(self.tokens) and self.tokens[self.at].is_word(*words)

    def take(self, *words: str) -> bool:
        if self.peek(*words):
            self.at += 1
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.take(*words):
            raise ValueError(f"expected {' or '.join(words)}")

    def table(self) -> TableRef:
        first = self.tokens[self.at].identifier()
        self.at += 1
        if self.at < len(self.tokens) and self.tokens[self.at].text == ".":
            second = self.tokens[self.at + 1].identifier()
            self.at += 2
            return TableRef(first, second)
        return TableRef(self.default_schema, first)

    def done(self) -> bool:
        return self.at >= len(self.tokens)

    def parse(self) -> Ddl:
        if self.take("ALTER"):
            self.take("ONLINE")
            self.take("IGNORE")
            self.expect("TABLE")
            table = self.table()
            clauses = split_top_level(self.tokens[self.at :])
            return AlterTable(table, tuple(_alter_clause(c, self.default_schema) for c in clauses if c))
        if self.take("RENAME"):
            if not self.take("TABLE", "TABLES"):
                raise ValueError("RENAME of something other than tables")
            pairs = []
            while True:
                old = self.table()
                self.expect("TO")
                pairs.append((old, self.table()))
                if self.done():
                    return RenameTables(tuple(pairs))
                if self.tokens[self.at].text != ",":
                    raise ValueError("RENAME TABLE list")
                self.at += 1
        if self.take("TRUNCATE"):
            self.take("TABLE")
            return TruncateTable(self.table())
        if self.take("DROP"):
            return self._drop()
        if self.take("CREATE"):
            return self._create()
        raise ValueError("not a statement this parser knows")

    def _drop(self) -> Ddl:
        temporary = self.take("TEMPORARY")
        if self.take("TABLE", "TABLES"):
            self.take_if_exists()
            tables = [self.table()]
            while not self.done() and self.tokens[self.at].text == ",":
                self.at += 1
                tables.append(self.table())
            return DropTables(tuple(tables), temporary)
        if self.take("DATABASE", "SCHEMA"):
            self.take_if_exists()
            return DropDatabase(self.tokens[self.at].identifier())
        if self.take("INDEX"):
            self.at += 1  # the index name
            self.expect("ON")
            return IndexChange(self.table())
        raise ValueError("DROP of something other than a table, database or index")

    def _create(self) -> Ddl:
        self.take("TEMPORARY")
        if self.take("TABLE"):
            if self.take("IF"):
                self.expect("NOT")
                self.expect("EXISTS")
            return CreateTable(self.table())
        self.take("UNIQUE", "FULLTEXT", "SPATIAL")
        if self.take("INDEX"):
            while not self.take("ON"):
                self.at += 1
            return IndexChange(self.table())
        raise ValueError("CREATE of something other than a table or index")

    def take_if_exists(self) -> None:
        if self.take("IF"):
            self.expect("EXISTS")


# --- ALTER TABLE clauses -------------------------------------------------------------------------

_INDEX_WORDS = ("INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK")
_TABLE_OPTIONS = (
    "ALGORITHM", "LOCK", "FORCE", "ENGINE", "COMMENT", "ROW_FORMAT", "AUTO_INCREMENT", "KEY_BLOCK_SIZE",
    "STATS_AUTO_RECALC", "STATS_PERSISTENT", "STATS_SAMPLE_PAGES", "CHECKSUM", "DELAY_KEY_WRITE",
    "PACK_KEYS", "AVG_ROW_LENGTH", "MAX_ROWS", "MIN_ROWS", "COMPRESSION", "ENCRYPTION", "INSERT_METHOD",
    "AUTOEXTEND_SIZE", "SECONDARY_ENGINE", "SECONDARY_ENGINE_ATTRIBUTE", "ENGINE_ATTRIBUTE", "ENABLE",
    "DISABLE", "WITH", "WITHOUT", "CHARSET", "COLLATE",
)  # fmt: skip


def _alter_clause(clause: list[Token], default_schema: str) -> AlterAction:
    text = " ".join(t.text for t in clause)
    first = clause[0]
    rest = clause[1:]
    if first.is_word("ADD"):
        return _add(rest, text)
    if first.is_word("DROP"):
        if rest and rest[0].is_word("PRIMARY"):
            return PrimaryKeyChange(text)
        if rest and rest[0].is_word(*_INDEX_WORDS, "CONSTRAINT"):
            return IndexOnly(text)
        if rest and rest[0].is_word("PARTITION"):
            return OtherChange(text)
        names = rest[1:] if rest and rest[0].is_word("COLUMN") else rest
        if len(names) == 1:
            return DropColumn(names[0].identifier())
        return OtherChange(text)
    if first.is_word("MODIFY"):
        names = rest[1:] if rest and rest[0].is_word("COLUMN") else rest
        return ModifyColumn(names[0].identifier(), text)
    if first.is_word("CHANGE"):
        names = rest[1:] if rest and rest[0].is_word("COLUMN") else rest
        return ChangeColumn(names[0].identifier(), names[1].identifier(), text)
    if first.is_word("RENAME"):
        if rest and rest[0].is_word("COLUMN") and len(rest) == 4 and rest[2].is_word("TO"):
            return RenameColumn(rest[1].identifier(), rest[3].identifier())
        if rest and rest[0].is_word("INDEX", "KEY"):
            return IndexOnly(text)
        names = rest[1:] if rest and rest[0].is_word("TO", "AS") else rest
        statement = _Statement(names, default_schema)
        new = statement.table()
        if not statement.done():
            raise ValueError(f"RENAME clause {text!r}")
        return RenameTo(new)
    if first.is_word("ALTER"):
        if rest and rest[0].is_word("INDEX", "CHECK", "CONSTRAINT"):
            return IndexOnly(text)
        names = rest[1:] if rest and rest[0].is_word("COLUMN") else rest
        if (
            len(names) >= 3
            and names[1].is_word("SET", "DROP")
            and names[2].is_word("DEFAULT", "VISIBLE", "INVISIBLE")
        ):
            return DefaultChange(names[0].identifier())
        return OtherChange(text)
    if first.is_word(*_TABLE_OPTIONS):
        return TableOption(text)
    if first.is_word("DEFAULT") and rest and rest[0].is_word("CHARACTER", "CHARSET", "COLLATE"):
        return TableOption(text)
    if first.is_word("CHARACTER") and rest and rest[0].is_word("SET"):
        return TableOption(text)
    return OtherChange(text)


def _add(rest: list[Token], text: str) -> AlterAction:
    if not rest:
        raise ValueError("ADD without anything")
    head = rest[0]
    if head.is_word("PRIMARY"):
        return PrimaryKeyChange(text)
    if head.is_word("CONSTRAINT"):
        return PrimaryKeyChange(text) if any(t.is_word("PRIMARY") for t in rest) else IndexOnly(text)
    if head.is_word(*_INDEX_WORDS):
        return IndexOnly(text)
    if head.is_word("PARTITION"):
        return OtherChange(text)
    if head.is_word("COLUMN"):
        rest = rest[1:]
    if rest and rest[0].text == "(":
        return OtherChange(f"{text} (several columns in parentheses)")
    return _column_definition(rest, text)


def _column_definition(tokens: list[Token], text: str) -> AlterAction:
    from airflow_mysql_cdc.engine.mysql.ddl_types import column_type_of

    name = tokens[0].identifier()
    column_type, at = column_type_of(name, tokens, 1)
    nullable, default, position = True, NoDefault(), None
    while at < len(tokens):
        token = tokens[at]
        if token.is_word("NOT") and at + 1 < len(tokens) and tokens[at + 1].is_word("NULL"):
            nullable, at = False, at + 2
        elif token.is_word("NULL"):
            at += 1
        elif token.is_word("DEFAULT"):
            default, at = default_value(column_type, tokens, at + 1)
        elif token.is_word("COMMENT", "COLUMN_FORMAT", "STORAGE", "COLLATE", "SRID"):
            at += 2
        elif token.is_word("VISIBLE", "INVISIBLE", "UNIQUE", "KEY"):
            at += 1
        elif token.is_word("FIRST"):
            position, at = "FIRST", at + 1
        elif token.is_word("AFTER"):
            position, at = f"AFTER {tokens[at + 1].identifier()}", at + 2
        elif token.is_word("PRIMARY"):
            return PrimaryKeyChange(text)
        elif token.is_word("AUTO_INCREMENT", "GENERATED", "AS", "ON", "CHECK", "REFERENCES", "SERIAL"):
            return OtherChange(f"{text} ({token.text} column)")
        else:
            return OtherChange(f"{text} (attribute {token.text!r} not recognised)")
    return AddColumn(name, column_type, nullable, default, position)
