"""Table identity and shape, read from ``information_schema``: the one column model, and the row key.

Invariant (one model): :class:`Column` is the only description of a source column read from
``information_schema.COLUMNS``, and :func:`read_columns` the only query that reads it. The type
mapping (:meth:`.types.ColumnType.from_column`), the key order of snapshot chunks
(:mod:`~airflow_mysql_cdc.engine.snapshot.key_order`) and the prerequisite checks all start from
it, so they cannot disagree about a column: three readers with two ENUM member parsers once did, on
a member containing ``','`` and on members with capitals (one reader lower-cased the declaration).
Guarded by ``test_enum_and_set_members_with_quotes_commas_and_capitals_are_one_model_on_every_path``.

A known limit: ``information_schema`` holds COLUMN_TYPE as utf8mb3, so an ENUM/SET member with a
4-byte character (an emoji) reads back as ``?`` here while the binlog's table map has it right; the
snapshot's column type then differs from the stream's, and such a member cannot be a key's.

Invariant (row key): every replicated table has a *row key*, its primary key or else a unique key whose
columns are all NOT NULL. The key is what the sink merges on and what snapshot chunks are cut by;
a unique key with a nullable column is not a key (MySQL allows many NULL rows in it), so it is
never chosen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import pymysql

KeyKind = Literal["primary", "unique_not_null"]


def quote_identifier(name: str) -> str:
    """A schema, table or column name as a MySQL identifier (backticks, inner backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True, order=True)
class TableRef:
    schema: str
    table: str

    @classmethod
    def parse(cls, text: str) -> TableRef:
        """``schema.table``; backticks allowed around either part."""
        parts = [part.strip().strip("`") for part in text.strip().split(".")]
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"table {text!r} must be written as schema.table")
        return cls(parts[0], parts[1])

    def __str__(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def quoted(self) -> str:
        return f"{quote_identifier(self.schema)}.{quote_identifier(self.table)}"


_QUOTED_MEMBER = re.compile(r"\s*'((?:[^'\\]|''|\\.)*)'\s*", re.DOTALL)
_MEMBER_ESCAPE = re.compile(r"''|\\(.)", re.DOTALL)
_ESCAPED = {"0": "\0", "n": "\n", "r": "\r", "t": "\t", "b": "\b", "Z": "\x1a"}


def parse_members(column_type: str) -> tuple[str, ...]:
    """The members of an ``enum(...)``/``set(...)`` declaration as ``COLUMN_TYPE`` prints it, in order.

    MySQL 9.7 prints each member as a quoted literal: a quote doubled, a backslash doubled, a newline
    and a carriage return escaped, anything else (a comma, a tab, capitals) as it is. Members are read
    quote by quote, never split at ``','``: ``enum('x'',''y','z')`` holds ``x','y`` and ``z``. Any
    other text is refused rather than read as some members (``tests/unit/test_column_members.py``).
    """
    opening, closing = column_type.find("("), column_type.rfind(")")
    inside = column_type[opening + 1 : closing] if 0 <= opening < closing else ""
    members: list[str] = []
    position = 0
    while match := _QUOTED_MEMBER.match(inside, position):
        members.append(_MEMBER_ESCAPE.sub(_unescape, match.group(1)))
        position = match.end()
        if position == len(inside):
            return tuple(members)
        if inside[position] != ",":
            break
        position += 1
    raise ValueError(f"column type {column_type!r} does not hold a quoted member list")


def _unescape(match: re.Match[str]) -> str:
    escaped = match.group(1)
    return "'" if escaped is None else _ESCAPED.get(escaped, escaped)


@dataclass(frozen=True)
class Column:
    """One source column as ``information_schema`` declares it: the engine's one column model."""

    name: str
    data_type: str
    """Base type in lower case, as ``information_schema.COLUMNS.DATA_TYPE`` (``int``, ``varchar``)."""
    column_type: str
    """The declaration as MySQL prints it (``int unsigned``, ``enum('Red','x'',''y')``, ``datetime(6)``);
    not lower-cased, because ENUM and SET members keep their case."""
    nullable: bool
    character_set: str | None = None
    collation: str | None = None
    pad_space: bool = False
    """The collation ignores trailing spaces (``PAD SPACE``), as key comparisons must too."""
    numeric_precision: int | None = None
    """DECIMAL precision, or BIT width."""
    numeric_scale: int | None = None
    datetime_precision: int | None = None
    octet_length: int | None = None
    """``CHARACTER_OCTET_LENGTH``: the padded length of a ``BINARY(n)``."""

    @property
    def unsigned(self) -> bool:
        return "unsigned" in self.column_type.lower()

    @cached_property
    def members(self) -> tuple[str, ...]:
        """ENUM/SET members in definition order (empty for other types)."""
        return parse_members(self.column_type) if self.data_type in ("enum", "set") else ()

    @property
    def ordered_by_number(self) -> bool:
        """ENUM and SET values sort by the number MySQL stores (member index, bit set), not by text."""
        return self.data_type in ("enum", "set")

    def number_of(self, value: str) -> int:
        """The number MySQL stores for an ENUM or SET value: what ``ORDER BY`` and ``col + 0`` use."""
        if self.data_type == "enum":
            return self.members.index(value) + 1 if value else 0
        chosen = set(value.split(",")) if value else set()
        return sum(1 << i for i, member in enumerate(self.members) if member in chosen)


_COLUMNS_QUERY = (
    "SELECT c.COLUMN_NAME, c.DATA_TYPE, c.COLUMN_TYPE, c.IS_NULLABLE, c.CHARACTER_SET_NAME, c.COLLATION_NAME,"
    " co.PAD_ATTRIBUTE, c.NUMERIC_PRECISION, c.NUMERIC_SCALE, c.DATETIME_PRECISION, c.CHARACTER_OCTET_LENGTH"
    " FROM information_schema.COLUMNS c"
    " LEFT JOIN information_schema.COLLATIONS co ON co.COLLATION_NAME = c.COLLATION_NAME"
    " WHERE c.TABLE_SCHEMA = %s AND c.TABLE_NAME = %s ORDER BY c.ORDINAL_POSITION"
)


def read_columns(cursor: pymysql.cursors.Cursor, ref: TableRef) -> tuple[Column, ...]:
    """The table's columns in definition order (empty if it does not exist or is not visible)."""
    cursor.execute(_COLUMNS_QUERY, (ref.schema, ref.table))
    return tuple(_column(*row) for row in cursor.fetchall())


def _column(
    name: str, data_type: str, column_type: str, nullable: str, charset: str | None, collation: str | None,
    pad: str | None, precision: object, scale: object, fsp: object, octets: object,
) -> Column:  # fmt: skip
    return Column(
        name=name,
        data_type=str(data_type).lower(),
        column_type=str(column_type),
        nullable=nullable == "YES",
        character_set=charset,
        collation=collation,
        pad_space=pad == "PAD SPACE",
        numeric_precision=_int_or_none(precision),
        numeric_scale=_int_or_none(scale),
        datetime_precision=_int_or_none(fsp),
        octet_length=_int_or_none(octets),
    )


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class TableMetadata:
    ref: TableRef
    engine: str | None
    columns: tuple[Column, ...]
    key_columns: tuple[str, ...]
    key_kind: KeyKind | None
    key_name: str | None

    @property
    def has_row_key(self) -> bool:
        return bool(self.key_columns)

    @property
    def row_key_columns(self) -> tuple[Column, ...]:
        """The row key's columns, in key order."""
        return tuple(self.column(name) for name in self.key_columns)

    def column(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"{self.ref} has no column {name!r}")


def read_table_metadata(cursor: pymysql.cursors.Cursor, ref: TableRef) -> TableMetadata | None:
    """The table's shape, or None when it does not exist (or the user cannot see it)."""
    cursor.execute(
        "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
        " AND TABLE_TYPE = 'BASE TABLE'",
        (ref.schema, ref.table),
    )
    table_row = cursor.fetchone()
    if table_row is None:
        return None
    columns = read_columns(cursor, ref)
    key_name, key_columns = _choose_row_key(cursor, ref, {c.name: c for c in columns})
    key_kind: KeyKind | None = None
    if key_name == "PRIMARY":
        key_kind = "primary"
    elif key_name is not None:
        key_kind = "unique_not_null"
    return TableMetadata(
        ref=ref,
        engine=table_row[0],
        columns=columns,
        key_columns=key_columns,
        key_kind=key_kind,
        key_name=key_name,
    )


def _choose_row_key(
    cursor: pymysql.cursors.Cursor, ref: TableRef, columns: dict[str, Column]
) -> tuple[str | None, tuple[str, ...]]:
    cursor.execute(
        "SELECT INDEX_NAME, COLUMN_NAME, SUB_PART, EXPRESSION FROM information_schema.STATISTICS"
        " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND NON_UNIQUE = 0"
        " ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX",
        (ref.schema, ref.table),
    )
    keys: dict[str, list[str | None]] = {}
    for index_name, column_name, sub_part, expression in cursor.fetchall():
        # A prefix or functional key part does not identify the row by the column's value.
        usable = column_name if sub_part is None and expression is None else None
        keys.setdefault(index_name, []).append(usable)
    if "PRIMARY" in keys and all(keys["PRIMARY"]):
        return "PRIMARY", tuple(part for part in keys["PRIMARY"] if part is not None)
    candidates = [
        (len(parts), name, tuple(part for part in parts if part is not None))
        for name, parts in keys.items()
        if name != "PRIMARY" and all(parts) and not any(columns[p].nullable for p in parts if p)
    ]
    if not candidates:
        return None, ()
    _, name, parts = min(candidates)
    return name, parts
