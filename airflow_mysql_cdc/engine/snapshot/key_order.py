"""Order row keys the way MySQL orders them, in Python, so a key can be placed in its chunk.

Invariant: for two keys ``a`` and ``b`` of one table, ``sort_key(a) < sort_key(b)`` exactly when
MySQL's ``(a) < (b)`` on the key columns is true. Chunk boundaries are planned by MySQL itself
(keyset queries); this module only has to agree with MySQL when the streaming side and the window
reconciliation ask "which chunk holds this key?".

Per column kind:

- strings with a collation: MySQL's own ``WEIGHT_STRING`` under the column's collation, compared
  as bytes (its purpose is exactly this). PAD SPACE collations ignore trailing spaces, so those are
  stripped first (``'a '`` equals ``'a'`` there, but their weight strings differ).
- ENUM: the member's index (MySQL sorts ENUMs by index, not by text); SET: its bit mask.
- numbers, temporal values and binary strings: the canonical Python value, whose order matches
  MySQL's (binary strings compare bytewise, BINARY(n) values are padded on both paths).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pymysql

from airflow_mysql_cdc.engine.mysql.schema import TableRef

_WEIGHTS_PER_QUERY = 500
_TEXT_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})


@dataclass(frozen=True)
class KeyColumn:
    name: str
    data_type: str
    charset: str | None = None
    collation: str | None = None
    pad_space: bool = False
    members: tuple[str, ...] = ()

    @property
    def uses_weights(self) -> bool:
        return self.data_type in _TEXT_TYPES and self.collation is not None and self.collation != "binary"


def read_key_columns(
    cursor: pymysql.cursors.Cursor, ref: TableRef, key: Sequence[str]
) -> tuple[KeyColumn, ...]:
    cursor.execute(
        "SELECT c.COLUMN_NAME, c.DATA_TYPE, c.CHARACTER_SET_NAME, c.COLLATION_NAME, c.COLUMN_TYPE,"
        " co.PAD_ATTRIBUTE FROM information_schema.COLUMNS c"
        " LEFT JOIN information_schema.COLLATIONS co ON co.COLLATION_NAME = c.COLLATION_NAME"
        " WHERE c.TABLE_SCHEMA = %s AND c.TABLE_NAME = %s",
        (ref.schema, ref.table),
    )
    by_name = {row[0]: row for row in cursor.fetchall()}
    columns = []
    for name in key:
        _, data_type, charset, collation, column_type, pad = by_name[name]
        members: tuple[str, ...] = ()
        if str(data_type).lower() in ("enum", "set"):
            inner = str(column_type)[str(column_type).index("(") + 1 : -1]
            members = tuple(part.strip("'").replace("''", "'") for part in inner.split("','"))
        columns.append(
            KeyColumn(
                name=name,
                data_type=str(data_type).lower(),
                charset=charset,
                collation=collation,
                pad_space=pad == "PAD SPACE",
                members=members,
            )
        )
    return tuple(columns)


class KeyOrder:
    """Turns key tuples into Python-comparable sort keys; asks MySQL only for string weights."""

    def __init__(self, connection: pymysql.connections.Connection, columns: Sequence[KeyColumn]) -> None:
        self.connection = connection
        self.columns = tuple(columns)

    def sort_keys(self, keys: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
        weights = self._weights(keys)
        result = []
        for row_index, key in enumerate(keys):
            parts = []
            for column_index, (column, value) in enumerate(zip(self.columns, key, strict=True)):
                parts.append(self._part(column, value, weights.get((row_index, column_index))))
            result.append(tuple(parts))
        return result

    def sort_key(self, key: Sequence[Any]) -> tuple[Any, ...]:
        return self.sort_keys([key])[0]

    @staticmethod
    def _part(column: KeyColumn, value: Any, weight: bytes | None) -> Any:
        if value is None:
            raise ValueError(f"key column {column.name!r} is NULL; row keys are NOT NULL")
        if column.uses_weights:
            assert weight is not None
            return weight
        if column.data_type == "enum":
            return column.members.index(value) + 1 if value else 0
        if column.data_type == "set":
            chosen = set(value.split(",")) if value else set()
            return sum(1 << i for i, member in enumerate(column.members) if member in chosen)
        return value

    def _weights(self, keys: Sequence[Sequence[Any]]) -> dict[tuple[int, int], bytes]:
        expressions: list[str] = []
        params: list[Any] = []
        slots: list[tuple[int, int]] = []
        for row_index, key in enumerate(keys):
            for column_index, column in enumerate(self.columns):
                if not column.uses_weights:
                    continue
                value = key[column_index]
                if isinstance(value, bytes):
                    value = value.decode("utf-8")
                if column.pad_space:
                    value = value.rstrip(" ")
                expressions.append(
                    f"WEIGHT_STRING(CONVERT(%s USING {column.charset}) COLLATE {column.collation})"
                )
                params.append(value)
                slots.append((row_index, column_index))
        weights: dict[tuple[int, int], bytes] = {}
        for start in range(0, len(expressions), 500):
            with self.connection.cursor() as cursor:
                cursor.execute(
                    "SELECT " + ", ".join(expressions[start : start + 500]), params[start : start + 500]
                )
                row = cursor.fetchone()
            for slot, weight in zip(slots[start : start + 500], row, strict=True):
                weights[slot] = bytes(weight)
        return weights
