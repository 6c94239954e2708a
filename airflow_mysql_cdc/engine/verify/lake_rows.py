"""The lake's live rows of a run of chunks, each row placed in the chunk MySQL would place its key in.

Invariant: a live target row (not soft-deleted) whose key ``k`` satisfies ``lower < k <= upper`` of
chunk ``i``, in MySQL's order of the key (collations, ENUM numbers: :mod:`...snapshot.key_order`),
is among chunk ``i``'s lake rows, and no other row is. Rows outside every chunk of the run are
dropped, so a lake row is compared with exactly the source range that could hold its key, and a
key the source lacks shows as extra in its own chunk.

Reading: when the key's leading column is an integer or a DECIMAL, Delta's order of it is MySQL's,
so the read is narrowed to the run's leading-key bounds (files skipped by their statistics;
maintenance sorts targets by that column). Other keys (strings under a collation, temporal, ENUM)
are read whole once per table and kept for the table's runs: the driver holds the table's keys
and rows, the known limit of this driver-only version (docs/operations.md).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.errors import LakeMismatchError
from airflow_mysql_cdc.engine.lake.delta_layout import DELETED_COLUMN, delta_type
from airflow_mysql_cdc.engine.mysql.schema import Column
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.key_order import KeyOrder
from airflow_mysql_cdc.engine.verify.comparable import key_tuples

_NARROWED_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "decimal"})


class LakeSchemaDifferenceError(LakeMismatchError, ValueError):
    """The lake's target lacks a source column or stores it with another type."""


class LakeRows:
    """The live rows of one target, by chunk."""

    def __init__(
        self,
        table: DeltaTable,
        columns: Sequence[ColumnType],
        key: Sequence[str],
        key_columns: Sequence[Column],
        order: KeyOrder,
    ) -> None:
        self.table = table
        self.columns = tuple(columns)
        self.key = tuple(key)
        self.key_columns = tuple(key_columns)
        self.order = order
        self.schema = pa.schema(
            [pa.field(column.name, delta_type(column.arrow_type())) for column in columns]
        )
        self._whole: tuple[pa.Table, list[tuple[Any, ...]]] | None = None
        check_schema(table, self.schema)

    def by_chunk(self, chunks: Sequence[Chunk]) -> dict[int, pa.Table]:
        """Each chunk's live lake rows (``chunks``: consecutive, in key order)."""
        rows, sort_keys = self._rows_for(chunks)
        lower = chunks[0].lower
        lowest = self.order.sort_key(lower) if lower is not None else None
        uppers = self.order.sort_keys([chunk.upper for chunk in chunks if chunk.upper is not None])
        open_ended = chunks[-1].upper is None
        placed: list[list[int]] = [[] for _ in chunks]
        for row_index, sort_key in enumerate(sort_keys):
            if lowest is not None and sort_key <= lowest:
                continue
            position = bisect.bisect_left(uppers, sort_key)
            if position == len(uppers) and not open_ended:
                continue
            placed[position].append(row_index)
        return {
            chunk.index: rows.take(pa.array(indices, pa.int64()))
            for chunk, indices in zip(chunks, placed, strict=True)
        }

    def _rows_for(self, chunks: Sequence[Chunk]) -> tuple[pa.Table, list[tuple[Any, ...]]]:
        leading = self.key_columns[0]
        if leading.data_type in _NARROWED_TYPES:
            rows = self._read(_leading_bounds(leading.name, chunks))
            return rows, self.order.sort_keys(key_tuples(rows, self.key))
        if self._whole is None:
            rows = self._read(None)
            self._whole = (rows, self.order.sort_keys(key_tuples(rows, self.key)))
        return self._whole

    def _read(self, narrowed: pc.Expression | None) -> pa.Table:
        dataset = self.table.to_pyarrow_dataset()
        live = (
            pc.field(DELETED_COLUMN).is_null() | (pc.field(DELETED_COLUMN) == pa.scalar(False))
            if DELETED_COLUMN in dataset.schema.names
            else None
        )
        condition = live if narrowed is None else (narrowed if live is None else narrowed & live)
        rows = dataset.to_table(columns=list(self.schema.names), filter=condition)
        return rows.cast(self.schema)


def _leading_bounds(name: str, chunks: Sequence[Chunk]) -> pc.Expression | None:
    lower, upper = chunks[0].lower, chunks[-1].upper
    bounds = []
    if lower is not None:
        bounds.append(ds.field(name) >= lower[0])
    if upper is not None:
        bounds.append(ds.field(name) <= upper[0])
    if not bounds:
        return None
    return bounds[0] if len(bounds) == 1 else bounds[0] & bounds[1]


def check_schema(table: DeltaTable, wanted: pa.Schema) -> None:
    """Raise :class:`LakeSchemaDifferenceError` unless the target has every source column, as written."""
    lake = pa.schema(table.schema().to_arrow())
    differences = []
    for field in wanted:
        if field.name not in lake.names:
            differences.append(f"{field.name} is missing from the lake")
        elif lake.field(field.name).type != field.type:
            differences.append(
                f"{field.name} is {lake.field(field.name).type} in the lake, {field.type} from the source"
            )
    if differences:
        raise LakeSchemaDifferenceError("; ".join(differences))
