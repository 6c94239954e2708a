"""The lake's live rows of a run of chunks, each row placed in the chunk MySQL would place its key in.

Invariant: a live target row (not soft-deleted) whose key ``k`` satisfies ``lower < k <= upper`` of
chunk ``i``, in MySQL's order of the key (collations, ENUM numbers: :mod:`..snapshot.key_order`),
is among chunk ``i``'s lake rows, and no other row is. Rows outside every chunk of the run are
dropped, so a lake row is compared with exactly the source range that could hold its key, and a
key the source lacks shows as extra in its own chunk.

Reading: the target is read whole once per verification and kept for the table's runs of chunks
(the driver holds the table's rows, the known limit of this driver-only version,
docs/operations.md), and soft-deleted rows are dropped in memory. Never through a filter on
delta-rs's pyarrow dataset: delta-rs 1.6.6 turns a file's missing min/max statistics into
``column >= null`` guarantees, and a snapshot's data files carry none for ``_cdc_deleted``, so
``_cdc_deleted == false`` selected no row of them (every row then looked missing: found by
``test_a_corrupted_lake_is_found_repaired_and_then_clean_while_writers_run``).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.errors import LakeMismatchError
from airflow_mysql_cdc.engine.lake.delta_layout import DELETED_COLUMN, delta_type
from airflow_mysql_cdc.engine.mysql.schema import Column
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.key_order import KeyOrder
from airflow_mysql_cdc.engine.verify.comparable import key_tuples


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
        if self._whole is None:
            rows = self._read()
            self._whole = (rows, self.order.sort_keys(key_tuples(rows, self.key)))
        return self._whole

    def _read(self) -> pa.Table:
        names = set(self.table.to_pyarrow_dataset().schema.names)
        wanted = [*self.schema.names, *([DELETED_COLUMN] if DELETED_COLUMN in names else [])]
        rows = self.table.to_pyarrow_dataset().to_table(columns=wanted)
        if DELETED_COLUMN in names:
            rows = rows.filter(pc.invert(pc.fill_null(rows.column(DELETED_COLUMN), False)))
        return rows.select(list(self.schema.names)).cast(self.schema)


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
