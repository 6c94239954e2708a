"""The lake's live rows of any chunks, each row placed in the chunk MySQL would place its key in.

Invariant: a live target row (not soft-deleted) whose key ``k`` satisfies ``lower < k <= upper`` of
chunk ``i``, in MySQL's order of the key (collations, ENUM numbers: :mod:`..snapshot.key_order`),
is among chunk ``i``'s lake rows, and no other row is. Rows outside every chunk asked for are
dropped, so a lake row is compared with exactly the source range that could hold its key, and a
key the source lacks shows as extra in its own chunk. The chunks asked for together need not be
consecutive: a sample's next chunks and the chunks an earlier verification left to check again
(:mod:`.pending`) are placed in one pass.

Reading: the target is read whole once per verification, its rows sorted once by their keys' sort
keys, and each chunk is then a slice of that order (two bisections), so a full verification places
every row once. The driver holds the table's rows, the known limit of this driver-only version
(docs/operations.md), and soft-deleted rows are dropped in memory. Never through a filter on
delta-rs's pyarrow dataset: delta-rs 1.6.6 turns a file's missing min/max statistics into
``column >= null`` guarantees, and a snapshot's data files carry none for ``_cdc_deleted``, so
``_cdc_deleted == false`` selected no row of them (every row then looked missing: found by
``test_a_corrupted_lake_is_found_repaired_and_then_clean_while_writers_run``); and a key filter
would trust the very file statistics a broken write path may have got wrong (issue 33: files of
``decimal(20,0)`` keys at or above 2**63 skipped).

Keys held twice: the same sorted order shows every key two live rows hold (equal sort keys, so
``'a'`` and ``'A'`` under a case-insensitive collation too). The source's row key is unique, so
such a key is wrong in the lake at any position, whatever the source does meanwhile: it is found
in the whole target, whichever chunks this verification compares
(``test_a_key_held_twice_in_a_target_fails_verify_naming_it``).
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


class KeyedRows:
    """Rows sorted once by their keys in MySQL's order, sliced by chunk (module docstring)."""

    def __init__(
        self,
        rows: pa.Table,
        key: Sequence[str],
        order: KeyOrder,
        sort_keys: Sequence[tuple[Any, ...]] | None = None,
    ) -> None:
        """``sort_keys``: the rows' sort keys when already known (else asked of ``order``)."""
        self.rows = rows
        self.key = tuple(key)
        self.order = order
        if sort_keys is None:
            sort_keys = order.sort_keys(key_tuples(rows, self.key)) if rows.num_rows else []
        self.sort_keys = list(sort_keys)
        self._permutation = sorted(range(len(self.sort_keys)), key=self.sort_keys.__getitem__)
        self._sorted = [self.sort_keys[index] for index in self._permutation]

    def extended(self, more: pa.Table) -> KeyedRows:
        """These rows and ``more`` (only the new rows' sort keys are asked for)."""
        if not more.num_rows:
            return self
        added = self.order.sort_keys(key_tuples(more, self.key))
        rows = pa.concat_tables([self.rows, more.cast(self.rows.schema)]) if self.rows.num_rows else more
        return KeyedRows(rows, self.key, self.order, [*self.sort_keys, *added])

    def by_chunk(self, chunks: Sequence[Chunk]) -> dict[int, pa.Table]:
        """Each chunk's rows, by chunk index (chunks in any order, consecutive or not)."""
        bounds = [bound for chunk in chunks for bound in (chunk.lower, chunk.upper) if bound is not None]
        sort_keys = iter(self.order.sort_keys(bounds)) if bounds else iter(())
        placed = {}
        for chunk in chunks:
            low = bisect.bisect_right(self._sorted, next(sort_keys)) if chunk.lower is not None else 0
            high = (
                bisect.bisect_right(self._sorted, next(sort_keys))
                if chunk.upper is not None
                else len(self._sorted)
            )
            indices = self._permutation[low:high] if low < high else []
            placed[chunk.index] = self.rows.take(pa.array(indices, pa.int64()))
        return placed

    def held_twice(self) -> list[tuple[tuple[Any, ...], int]]:
        """Keys two or more rows hold, equal in MySQL's order, each once (by its first row's key
        values) with how many rows hold it."""
        held: list[tuple[tuple[Any, ...], int]] = []
        position = 0
        while position < len(self._sorted):
            end = position + 1
            while end < len(self._sorted) and self._sorted[end] == self._sorted[position]:
                end += 1
            if end - position > 1:
                first = self._permutation[position]
                held.append(
                    (tuple(self.rows.column(name)[first].as_py() for name in self.key), end - position)
                )
            position = end
        return held


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
        self._keyed: KeyedRows | None = None
        check_schema(table, self.schema)

    @property
    def keyed(self) -> KeyedRows:
        """The whole target's live rows, read and sorted on first use."""
        if self._keyed is None:
            self._keyed = KeyedRows(self._read(), self.key, self.order)
        return self._keyed

    @property
    def live_rows(self) -> int:
        """How many live rows the target holds."""
        return self.keyed.rows.num_rows

    def by_chunk(self, chunks: Sequence[Chunk]) -> dict[int, pa.Table]:
        """Each chunk's live lake rows, by chunk index."""
        return self.keyed.by_chunk(chunks)

    def held_twice(self) -> list[tuple[tuple[Any, ...], int]]:
        """Keys the target holds in two or more live rows, with how many."""
        return self.keyed.held_twice()

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
