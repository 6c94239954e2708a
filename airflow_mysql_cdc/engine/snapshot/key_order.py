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
from typing import Any

import pymysql

from airflow_mysql_cdc.engine.mysql.schema import Column, TableRef, read_columns

_WEIGHTS_PER_QUERY = 500
_TEXT_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})


def uses_weights(column: Column) -> bool:
    """A string compared under its collation: ordered by MySQL's ``WEIGHT_STRING``."""
    return column.data_type in _TEXT_TYPES and column.collation is not None and column.collation != "binary"


def read_key_columns(cursor: pymysql.cursors.Cursor, ref: TableRef, key: Sequence[str]) -> tuple[Column, ...]:
    """The key's columns, in key order, from the one column model.

    Read by :func:`~airflow_mysql_cdc.engine.mysql.schema.read_columns`, the only reader of columns.
    """
    by_name = {column.name: column for column in read_columns(cursor, ref)}
    return tuple(by_name[name] for name in key)


class KeyOrder:
    """Turns key tuples into Python-comparable sort keys; asks MySQL only for string weights."""

    def __init__(self, connection: pymysql.connections.Connection, columns: Sequence[Column]) -> None:
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
    def _part(column: Column, value: Any, weight: bytes | None) -> Any:
        if value is None:
            raise ValueError(f"key column {column.name!r} is NULL; row keys are NOT NULL")
        if uses_weights(column):
            assert weight is not None
            return weight
        if column.ordered_by_number:
            return column.number_of(value)
        return value

    def _weights(self, keys: Sequence[Sequence[Any]]) -> dict[tuple[int, int], bytes]:
        expressions: list[str] = []
        params: list[Any] = []
        slots: list[tuple[int, int]] = []
        for row_index, key in enumerate(keys):
            for column_index, column in enumerate(self.columns):
                if not uses_weights(column):
                    continue
                value = key[column_index]
                if isinstance(value, bytes):
                    value = value.decode("utf-8")
                if column.pad_space:
                    value = value.rstrip(" ")
                expressions.append(
                    f"WEIGHT_STRING(CONVERT(%s USING {column.character_set}) COLLATE {column.collation})"
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
