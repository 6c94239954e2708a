"""Cut a table into key-range chunks, with boundaries chosen by MySQL itself.

Invariant: the chunks partition the whole key space. Chunk ``i`` holds the keys ``k`` with
``lower_i < k <= upper_i`` (tuple comparison, as MySQL compares row constructors), the first chunk
has no lower bound and the last no upper bound, and ``upper_i == lower_{i+1}``. So every key that
exists now, and every key inserted while the snapshot runs, even outside the range seen while
planning, belongs to exactly one chunk. Boundaries are keys MySQL returned from keyset queries
ordered by the key, so collations and composite keys are compared by MySQL, never by Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pymysql

from airflow_mysql_cdc.engine.errors import ConfigurationError
from airflow_mysql_cdc.engine.mysql.schema import Column, TableMetadata, TableRef, quote_identifier


class TableNotFoundError(ConfigurationError, LookupError):
    """The configured table does not exist, or the connected user cannot see it."""


class NoRowKeyError(ConfigurationError, ValueError):
    """The table has neither a primary key nor a unique key of NOT NULL columns."""


@dataclass(frozen=True)
class Chunk:
    index: int
    lower: tuple[Any, ...] | None
    """Exclusive lower bound; None for the first chunk."""
    upper: tuple[Any, ...] | None
    """Inclusive upper bound; None for the last chunk."""


def range_predicate(key_columns: Sequence[Column], chunk: Chunk) -> tuple[str, list[Any]]:
    """SQL ``WHERE`` text and parameters selecting exactly the chunk's keys.

    ENUM and SET key columns are compared by their number (``col + 0``, the member index or bit set),
    which is how ``ORDER BY`` orders them and so how boundaries were chosen. Compared with a string,
    MySQL compares them as text: with members not in alphabetical order the chunks' ranges then
    overlapped or left gaps, and a key was read by two windows or by none
    (``test_a_table_keyed_by_an_enum_whose_members_are_not_in_text_order_is_snapshotted_exactly``).
    """
    columns = ", ".join(
        f"({quote_identifier(column.name)} + 0)"
        if column.ordered_by_number
        else quote_identifier(column.name)
        for column in key_columns
    )
    placeholders = ", ".join(["%s"] * len(key_columns))

    def bound(values: tuple[Any, ...]) -> list[Any]:
        return [
            column.number_of(value) if column.ordered_by_number else value
            for column, value in zip(key_columns, values, strict=True)
        ]

    clauses, params = [], []
    if chunk.lower is not None:
        clauses.append(f"({columns}) > ({placeholders})")
        params += bound(chunk.lower)
    if chunk.upper is not None:
        clauses.append(f"({columns}) <= ({placeholders})")
        params += bound(chunk.upper)
    return (" AND ".join(clauses) or "TRUE"), params


def require_row_key(metadata: TableMetadata | None, ref: TableRef) -> TableMetadata:
    if metadata is None:
        raise TableNotFoundError(f"table {ref} does not exist or is not visible to the connected user")
    if not metadata.has_row_key:
        raise NoRowKeyError(
            f"table {ref} has no primary key and no unique key of NOT NULL columns, so it cannot be "
            "snapshotted in chunks or merged by key. Add one "
            f"(ALTER TABLE {ref.quoted} ADD PRIMARY KEY (...)) or leave the table out of the pipeline."
        )
    return metadata


def plan_chunks(
    connection: pymysql.connections.Connection,
    metadata: TableMetadata,
    chunk_size: int,
    *,
    after: tuple[Any, ...] | None = None,
    max_chunks: int | None = None,
    until: tuple[Any, ...] | None = None,
) -> list[Chunk]:
    """Boundaries every ``chunk_size`` keys, read with keyset queries (no OFFSET over the whole table).

    ``after`` plans only the keys above it (the first chunk's exclusive lower bound), and
    ``max_chunks`` stops after that many chunks, the last of which then has an upper bound unless
    the table's keys ran out: a verification's sample (:mod:`airflow_mysql_cdc.engine.verify`).
    ``until`` plans only the keys up to it (inclusive): the last chunk's upper bound is ``until``
    (a re-load of a key range).
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be positive")
    key = metadata.key_columns
    key_columns = metadata.row_key_columns
    table = metadata.ref.quoted
    order_by = ", ".join(f"{table}.{quote_identifier(name)}" for name in key)
    # The stored value of a FLOAT/DOUBLE key, not MySQL's rounded text of it: a boundary rounded
    # below its key would select that key again, and planning could repeat one chunk forever.
    selected = ", ".join(
        f"CAST({table}.{quote_identifier(name)} AS DOUBLE)"
        if metadata.column(name).data_type in ("float", "double")
        else f"{table}.{quote_identifier(name)}"
        for name in key
    )
    boundaries: list[tuple[Any, ...]] = []
    with connection.cursor() as cursor:
        while max_chunks is None or len(boundaries) < max_chunks:
            where, params = "TRUE", list[Any]()
            lower = boundaries[-1] if boundaries else after
            if lower is not None or until is not None:
                where, params = range_predicate(key_columns, Chunk(0, lower, until))
            cursor.execute(
                f"SELECT {selected} FROM {table} WHERE {where} ORDER BY {order_by} LIMIT 1 OFFSET %s",
                [*params, chunk_size - 1],
            )
            row = cursor.fetchone()
            if row is None:
                break
            boundaries.append(tuple(row))
    chunks = []
    lower = after
    for index, upper in enumerate(boundaries):
        chunks.append(Chunk(index, lower, upper))
        lower = upper
    if max_chunks is None or len(chunks) < max_chunks:
        chunks.append(Chunk(len(boundaries), lower, until))  # may be empty when a boundary is ``until``
    return chunks
