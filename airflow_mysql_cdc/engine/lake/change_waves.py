"""A catch-up's changes of one table over a whole wave: the last row per key, and every change.

Invariant: a :class:`WaveTable` built from consecutive change tables (:meth:`WaveTable.add`) gives
the sink exactly what one change table of all of them would: :meth:`target_rows` is the last row
per key (last write wins is associative: folding each part into the rows kept so far picks the
same last row as one pass over the whole wave), and :meth:`changelog_tables` yields every change
in binlog order. So a catch-up merges each table once per wave instead of once per 50,000 rows,
and the changelog still receives every change once (``test_a_catch_up_merges_each_table_once_per_wave``).

Memory stays bounded: the last rows per key are kept in memory (their number is the distinct keys
the wave touched, at most its rows), while the changelog's rows, which grow with every change, go
to a local Arrow IPC file once the wave holds more than its memory bound (:meth:`spill`), and are
streamed from there into the changelog's append. Replayed transactions a table already holds are
left out of both (:meth:`without`); they come first in a replay, so leaving them out after the fold
is the same as before it.

The last rows also carry, per key, whether it existed before the wave and the transaction of its
first change there, taken from the first row by the same group-by (the ``min`` beside the ``max``),
so the wave's MERGE is checked like a micro-batch's (:mod:`.batch_check`). After a replay left out a
key's first change, its past is unknown: the check bounds it instead
(``test_a_replayed_wave_checks_keys_whose_first_change_was_left_out_as_unknown``).
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from airflow_mysql_cdc.engine.binlog.changes import TableShape
from airflow_mysql_cdc.engine.lake.batch_check import MergeExpectation
from airflow_mysql_cdc.engine.lake.change_table import (
    EXISTED_COLUMN,
    FIRST_GTID_COLUMN,
    ChangeTable,
    FinalRows,
    changelog_rows,
    distinct_transactions,
    existed_before_each,
    finish_final_rows,
    last_per_key,
)
from airflow_mysql_cdc.engine.lake.delta_layout import GTID_COLUMN
from airflow_mysql_cdc.engine.values.gtid import GtidSet

MIB = 1024 * 1024


class WaveTable:
    """One table's changes over a wave (module docstring); a :class:`TableChanges` for the sink."""

    def __init__(self, shape: TableShape, spill_dir: Path) -> None:
        self.shape = shape
        self.spill_dir = spill_dir
        self._last: pa.Table | None = None
        self._changes: list[pa.Table | Path] = []
        """The changelog's rows in binlog order: tables in memory, or files they were spilled to."""
        self._count = 0
        self._transactions = 0
        """Transactions over the parts: a transaction's changes are all in one part (one batch)."""
        self._skipped = GtidSet()

    def add(self, part: ChangeTable) -> None:
        """Fold the next change table (later in binlog order than everything added) into the wave."""
        rows = part.rows.append_column(EXISTED_COLUMN, existed_before_each(part))
        rows = rows.append_column(FIRST_GTID_COLUMN, part.rows[GTID_COLUMN])
        self._last = last_per_key(
            rows if self._last is None else pa.concat_tables([self._last, rows]),
            self.shape,
            first=(EXISTED_COLUMN, FIRST_GTID_COLUMN),
        )
        self._changes.append(_without_extra_rows(part))
        self.__dict__.pop("_final", None)  # folded after a look at the MERGE's rows: computed again
        self._count += part.change_count
        self._transactions += part.transaction_count

    @property
    def memory_bytes(self) -> int:
        held = sum(part.nbytes for part in self._changes if isinstance(part, pa.Table))
        return held + (self._last.nbytes if self._last is not None else 0)

    def spill(self) -> None:
        """Move the changelog rows held in memory to one local IPC file, after the ones spilled before."""
        held = [part for part in self._changes if isinstance(part, pa.Table)]
        if not held:
            return
        spilled = sum(isinstance(part, Path) for part in self._changes)
        path = self.spill_dir / f"{self.shape.qualified_name}-{spilled}.arrow"
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, held[0].schema) as writer:
            for part in held:
                writer.write_table(part)
        self._changes = [part for part in self._changes if isinstance(part, Path)] + [path]

    # --- TableChanges ---------------------------------------------------------------------------

    @property
    def change_count(self) -> int:
        if not self._skipped:
            return self._count
        return sum(table.num_rows for table in self._change_parts())

    @property
    def transaction_count(self) -> int:
        if not self._skipped:
            return self._transactions
        return sum(distinct_transactions(table) for table in self._change_parts())

    def without(self, skipped: GtidSet) -> WaveTable:
        if not skipped:
            return self
        view = WaveTable(self.shape, self.spill_dir)
        view._last, view._changes, view._count, view._transactions, view._skipped = (
            self._last,
            self._changes,
            self._count,
            self._transactions,
            skipped,
        )
        return view

    def target_rows(self) -> pa.Table:
        return self._final.rows

    def expected_merge(self) -> MergeExpectation:
        return self._final.expected

    @functools.cached_property
    def _final(self) -> FinalRows:
        assert self._last is not None, "add() changes first"
        last = _drop(self._last, self._skipped)
        if self._skipped:  # a key whose first change was left out: its past is unknown here
            left_out = pc.is_in(last[FIRST_GTID_COLUMN], value_set=_names(self._skipped))
            unknown = pc.if_else(left_out, pa.scalar(None, pa.bool_()), last[EXISTED_COLUMN])
            last = last.set_column(last.schema.get_field_index(EXISTED_COLUMN), EXISTED_COLUMN, unknown)
        return finish_final_rows(last, self.shape)

    def changelog_tables(self, schema: pa.Schema) -> Iterator[pa.Table]:
        for table in self._change_parts():
            yield changelog_rows(ChangeTable(self.shape, table), schema)

    def _change_parts(self) -> Iterator[pa.Table]:
        for part in self._changes:
            if isinstance(part, Path):
                with pa.memory_map(str(part)) as source:
                    reader = pa.ipc.open_file(source)
                    for index in range(reader.num_record_batches):
                        yield _drop(pa.Table.from_batches([reader.get_batch(index)]), self._skipped)
            else:
                yield _drop(part, self._skipped)


def _without_extra_rows(part: ChangeTable) -> pa.Table:
    """The change table's rows that are changelog rows (old-key deletes of key changes left out)."""
    if not part.extra_rows:
        return part.rows
    mask = [True] * part.rows.num_rows
    for position in part.extra_rows:
        mask[position] = False
    return part.rows.filter(pa.array(mask, pa.bool_()))


def _drop(rows: pa.Table, skipped: GtidSet) -> pa.Table:
    if not skipped:
        return rows
    return rows.filter(pc.invert(pc.is_in(rows[GTID_COLUMN], value_set=_names(skipped))))


def _names(gtids: GtidSet) -> pa.Array:
    return pa.array([str(gtid) for gtid in gtids], pa.string())


class Wave:
    """A catch-up's changes since its last apply, per table, within a row and a memory bound."""

    def __init__(self, max_rows: int, memory_bytes: int) -> None:
        self.max_rows = max_rows
        self.memory_bytes = memory_bytes
        self.rows = 0
        self.transactions = 0
        self.spilled = False
        self._tables: dict[str, WaveTable] = {}
        self._directory: tempfile.TemporaryDirectory[str] | None = None

    def add(self, tables: Mapping[str, ChangeTable], transactions: int) -> None:
        """Fold the next micro-batch's change tables in; spill the changelog rows above the memory bound."""
        for name, table in tables.items():
            wave_table = self._tables.get(name)
            if wave_table is None:
                wave_table = self._tables[name] = WaveTable(table.shape, self._spill_dir())
            wave_table.add(table)
            self.rows += table.rows.num_rows
        self.transactions += transactions
        if sum(table.memory_bytes for table in self._tables.values()) > self.memory_bytes:
            for wave_table in self._tables.values():
                wave_table.spill()
            self.spilled = True

    @property
    def full(self) -> bool:
        return self.rows >= self.max_rows

    def tables(self) -> dict[str, WaveTable]:
        return dict(self._tables)

    def clear(self) -> None:
        """Forget the applied wave and delete its spilled files."""
        self._tables, self.rows, self.transactions, self.spilled = {}, 0, 0, False
        if self._directory is not None:
            self._directory.cleanup()
            self._directory = None

    def _spill_dir(self) -> Path:
        if self._directory is None:
            self._directory = tempfile.TemporaryDirectory(prefix="mysql-cdc-wave-")
        return Path(self._directory.name)
