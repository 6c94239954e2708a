"""Rows and keys of both sides in one comparable form, an order-independent checksum, a row diff.

Invariant: a source row and a lake row compare equal exactly when the pipeline, writing that
source row, stores that lake row. Both sides are taken to Delta's storage types by the pipeline's
own conversions (canonical Arrow values, :mod:`~airflow_mysql_cdc.engine.mysql.types`, then
:func:`~airflow_mysql_cdc.engine.lake.delta_layout.to_delta_array`), the same path
:mod:`~airflow_mysql_cdc.engine.lake.compare` uses, and only the source's columns are compared
(a column MySQL dropped stays in the lake as NULLs). Keys from the binlog (canonical Python values)
go through the same conversion, so "was this key changed after the position?" is asked of the very
tuples the rows carry.

The chunk checksum is the row count and the sum, modulo 2**64, of each row's SHA-256 prefix: the
order rows come in does not change it, a duplicated row does (a sum, not an XOR, which two equal
rows would cancel), and equal checksums let a chunk skip the row-by-row diff.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from airflow_mysql_cdc.engine.lake.delta_layout import to_delta_array
from airflow_mysql_cdc.engine.mysql.types import ColumnType, to_arrow_array

Key = tuple[Any, ...]
_MASK = 2**64
MASKED = "***"


def delta_rows(columns: Sequence[ColumnType], canonical: pa.Table) -> pa.Table:
    """The source's canonical rows in Delta's storage types, source columns only, in order."""
    return pa.table(
        {column.name: to_delta_array(canonical.column(column.name).combine_chunks()) for column in columns}
    )


def delta_keys(key_columns: Sequence[ColumnType], canonical_keys: Iterable[Sequence[Any]]) -> set[Key]:
    """Keys given as canonical Python values (a binlog image), as the rows' key tuples are."""
    return set(delta_key_list(key_columns, canonical_keys))


def delta_key_list(key_columns: Sequence[ColumnType], canonical_keys: Iterable[Sequence[Any]]) -> list[Key]:
    """:func:`delta_keys`, one per key given, in order."""
    keys = list(canonical_keys)
    if not keys:
        return []
    converted = [
        to_delta_array(to_arrow_array(column, [key[index] for key in keys])).to_pylist()
        for index, column in enumerate(key_columns)
    ]
    return list(zip(*converted, strict=True))


def key_tuples(rows: pa.Table, key: Sequence[str]) -> list[Key]:
    return list(zip(*(rows.column(name).to_pylist() for name in key), strict=True))


def without_keys(rows: pa.Table, key: Sequence[str], excluded: set[Key]) -> tuple[pa.Table, int]:
    """``rows`` without the rows whose key is in ``excluded``, and how many were left out."""
    if not excluded or rows.num_rows == 0:
        return rows, 0
    keep = [row_key not in excluded for row_key in key_tuples(rows, key)]
    kept = rows.filter(pa.array(keep, pa.bool_()))
    return kept, rows.num_rows - kept.num_rows


def row_digest(values: Sequence[Any]) -> int:
    return int.from_bytes(hashlib.sha256(repr(tuple(values)).encode()).digest()[:8], "big")


@dataclass(frozen=True)
class ChunkChecksum:
    """An order-independent checksum of a set of rows (module docstring)."""

    rows: int = 0
    digest_sum: int = 0

    @classmethod
    def of(cls, rows: pa.Table) -> ChunkChecksum:
        total = 0
        for row in _row_values(rows):
            total = (total + row_digest(row)) % _MASK
        return cls(rows.num_rows, total)

    def __str__(self) -> str:
        return f"{self.rows}:{self.digest_sum:016x}"


def _row_values(rows: pa.Table) -> Iterable[tuple[Any, ...]]:
    columns = [rows.column(name).to_pylist() for name in rows.column_names]
    return zip(*columns, strict=True) if columns else iter(())


@dataclass
class RowDiff:
    """How the lake's rows of a key range differ from the source's."""

    missing: list[Key] = field(default_factory=list)
    """Keys the source has and the lake does not."""
    extra: list[Key] = field(default_factory=list)
    """Keys the lake has and the source does not."""
    differing: dict[Key, tuple[str, ...]] = field(default_factory=dict)
    """Keys both have, with the columns whose values differ."""
    source_rows: dict[Key, dict[str, Any]] = field(default_factory=dict, repr=False)
    lake_rows: dict[Key, dict[str, Any]] = field(default_factory=dict, repr=False)

    @property
    def keys(self) -> list[Key]:
        return [*self.missing, *self.extra, *self.differing]

    def __bool__(self) -> bool:
        return bool(self.missing or self.extra or self.differing)


def diff_rows(source: pa.Table, lake: pa.Table, key: Sequence[str]) -> RowDiff:
    """Missing, extra and differing keys of ``lake`` against ``source`` (same columns, same types).

    A key the lake holds twice is reported as differing in every column it has twice (``*``).
    """
    source_by_key = _by_key(source, key)
    lake_by_key = _by_key(lake, key)
    diff = RowDiff()
    for row_key, row in source_by_key.items():
        lake_row = lake_by_key.get(row_key)
        if lake_row is None:
            diff.missing.append(row_key)
            diff.source_rows[row_key] = row
        elif lake_row != row:
            diff.differing[row_key] = tuple(name for name in row if row[name] != lake_row.get(name)) or ("*",)
            diff.source_rows[row_key], diff.lake_rows[row_key] = row, lake_row
    for row_key, lake_row in lake_by_key.items():
        if row_key not in source_by_key:
            diff.extra.append(row_key)
            diff.lake_rows[row_key] = lake_row
    duplicated = lake.num_rows - len(lake_by_key)
    if duplicated:
        for row_key in _duplicated_keys(lake, key):
            if row_key in source_by_key and row_key not in diff.differing:
                diff.differing[row_key] = ("*",)
                diff.source_rows[row_key], diff.lake_rows[row_key] = (
                    source_by_key[row_key],
                    lake_by_key[row_key],
                )
    return diff


def _by_key(rows: pa.Table, key: Sequence[str]) -> dict[Key, dict[str, Any]]:
    names = rows.column_names
    by_key = {}
    for values in _row_values(rows):
        row = dict(zip(names, values, strict=True))
        by_key[tuple(row[name] for name in key)] = row
    return by_key


def _duplicated_keys(rows: pa.Table, key: Sequence[str]) -> list[Key]:
    seen: set[Key] = set()
    duplicated = []
    for row_key in key_tuples(rows, key):
        if row_key in seen:
            duplicated.append(row_key)
        seen.add(row_key)
    return duplicated


def key_hash(row_key: Key) -> str:
    """A short, stable name for a key that does not show its values (masked examples)."""
    return hashlib.sha256(repr(row_key).encode()).hexdigest()[:12]


def example(
    kind: str,
    row_key: Key,
    key: Sequence[str],
    diff: RowDiff,
    *,
    mask_values: bool,
) -> dict[str, Any]:
    """One differing key as the result and the failure message show it: values only when not masked."""
    columns = list(diff.differing.get(row_key, ()))
    shown: dict[str, Any] = {"kind": kind, "key_hash": key_hash(row_key)}
    if not mask_values:
        shown["key"] = {name: _plain(value) for name, value in zip(key, row_key, strict=True)}
    if columns:
        shown["columns"] = columns
    if not mask_values and kind == "differing":
        source, lake = diff.source_rows[row_key], diff.lake_rows[row_key]
        named = columns if columns != ["*"] else list(source)
        shown["source"] = {name: _plain(source.get(name)) for name in named}
        shown["lake"] = {name: _plain(lake.get(name)) for name in named}
    return shown


def duplicate_example(row_key: Key, rows: int, key: Sequence[str], *, mask_values: bool) -> dict[str, Any]:
    """A key the lake holds ``rows`` times, as the result and the failure message show it."""
    shown: dict[str, Any] = {"kind": "duplicated", "key_hash": key_hash(row_key), "rows": rows}
    if not mask_values:
        shown["key"] = {name: _plain(value) for name, value in zip(key, row_key, strict=True)}
    return shown


def _plain(value: Any) -> Any:
    """A value as JSON can hold it (XCom): numbers and strings stay, others become their text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return "0x" + value.hex()
    return str(value)
