"""Table identity and shape, read from ``information_schema``: columns, types, and the row key.

Invariant: every replicated table has a *row key*, its primary key or else a unique key whose
columns are all NOT NULL. The key is what the sink merges on and what snapshot chunks are cut by;
a unique key with a nullable column is not a key (MySQL allows many NULL rows in it), so it is
never chosen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    data_type: str
    """Base type in lower case, as ``information_schema.COLUMNS.DATA_TYPE`` (``int``, ``varchar``)."""
    column_type: str
    """Full declaration (``int unsigned``, ``enum('a','b')``, ``datetime(6)``)."""
    nullable: bool
    character_set: str | None = None

    @property
    def unsigned(self) -> bool:
        return "unsigned" in self.column_type


@dataclass(frozen=True)
class TableMetadata:
    ref: TableRef
    engine: str | None
    columns: tuple[ColumnInfo, ...]
    key_columns: tuple[str, ...]
    key_kind: KeyKind | None
    key_name: str | None

    @property
    def has_row_key(self) -> bool:
        return bool(self.key_columns)

    def column(self, name: str) -> ColumnInfo:
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
    cursor.execute(
        "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME"
        " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
        " ORDER BY ORDINAL_POSITION",
        (ref.schema, ref.table),
    )
    columns = tuple(
        ColumnInfo(
            name=name,
            data_type=str(data_type).lower(),
            column_type=str(column_type).lower(),
            nullable=nullable == "YES",
            character_set=charset,
        )
        for name, data_type, column_type, nullable, charset in cursor.fetchall()
    )
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
    cursor: pymysql.cursors.Cursor, ref: TableRef, columns: dict[str, ColumnInfo]
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
        return "PRIMARY", tuple(keys["PRIMARY"])  # type: ignore[arg-type]
    candidates = [
        (len(parts), name, tuple(parts))
        for name, parts in keys.items()
        if name != "PRIMARY" and all(parts) and not any(columns[p].nullable for p in parts if p)
    ]
    if not candidates:
        return None, ()
    _, name, parts = min(candidates)
    return name, parts  # type: ignore[return-value]
