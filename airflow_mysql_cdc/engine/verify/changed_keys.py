"""Each key's row at the position, for the keys transactions after it changed: read from the binlog.

Invariant: for a key ``k`` of a tracked table that a transaction read here after the position ``E``
changed, :meth:`ChangedKeys.rows_at_position` gives ``k``'s row at ``E``: the *before* image of the
first change of ``k`` after ``E`` (a row), or nothing when that first change's image of ``k`` is an
*after* image (an insert, or an update moving a row onto ``k``: ``k`` did not exist at ``E``). Why:

1. The follower reads the binlog from ``E`` in binlog order, so the first change of ``k`` it meets is
   the first transaction after ``E`` that touched ``k``; changes of one row are in the binlog in the
   order InnoDB's row locks committed them, so every change of ``k`` before that one is in ``E``
   (the lake holds it) and none after it is.
2. Row images are whole (``binlog_row_image=FULL``, checked per event by
   :mod:`~airflow_mysql_cdc.engine.binlog.decoding.rows`) and decoded to the canonical values a
   snapshot ``SELECT`` gives for the same row, so the before image converted by the pipeline's own
   conversions (:func:`~.comparable.delta_rows`) is the row the lake must hold for ``k``. Within a
   transaction, events are in execution order: a key deleted and inserted again shows its delete
   (its before image) first.
3. Where the binlog does not say what a change did, the first change of a key met after it proves
   nothing about ``E``: after a DDL or a statement-logged change of the table (its rows are not in the
   binlog), such keys are *left out* by :meth:`ChangedKeys.left_out` (compared at a later position,
   :mod:`.pending`), and a DDL or statement-logged change within the window makes the whole table
   inconclusive (:mod:`.table_check`).

So a key written continuously is compared at ``E`` all the same: before this module kept rows, every
key changed after ``E`` was left out, and a full verification of a hot table compared under a tenth
of it ("55 rows compared in 2/2 chunk(s), 771 left out", issue 33); guarded by
``test_verify_with_writers_running_never_reports_a_difference`` (every key compared, writers on).

:class:`BinlogFollower` fills a :class:`ChangedKeys` by reading the binlog from ``E`` on, one
stretch at a time: each :meth:`BinlogFollower.advance_to` continues where the last stretch ended,
so a verification reads every transaction after ``E`` once, however many chunks it checks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from airflow_mysql_cdc.engine.binlog.changes import Op, Transaction
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import UntilGtidSet
from airflow_mysql_cdc.engine.mysql.types import ColumnType, to_arrow_table
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet
from airflow_mysql_cdc.engine.verify.comparable import Key, delta_key_list, delta_rows


@dataclass(frozen=True)
class FirstChange:
    """The first change of a key after the position: its GTID, and the key's row at the position."""

    gtid: Gtid
    row: Mapping[str, Any] | None
    """The canonical before image (None: the key did not exist at the position)."""
    known: bool = True
    """False when a change the binlog does not describe (DDL, statement-logged) came before it."""


class ChangedKeys:
    """Per table: keys changed after a position (by GTID), each key's first change, and the GTIDs of
    changes whose rows the binlog does not name (DDL, statement-logged changes)."""

    def __init__(self, position: GtidSet) -> None:
        self.position = position
        self._keys: dict[str, dict[Gtid, set[Key]]] = defaultdict(dict)
        self._first: dict[str, dict[Key, FirstChange]] = defaultdict(dict)
        self._first_order: dict[str, list[Key]] = defaultdict(list)
        self._schema_changes: dict[str, list[Gtid]] = defaultdict(list)
        self._statement_changes: dict[str, list[Gtid]] = defaultdict(list)

    def record(self, gtid: Gtid, table: str, keys: Iterable[Key]) -> None:
        """``keys`` changed by ``gtid`` (no rows known: each is left out where the window holds it)."""
        self._keys[table].setdefault(gtid, set()).update(keys)
        for key in self._keys[table][gtid]:
            self._add_first(table, key, FirstChange(gtid, None, known=False))

    def record_images(
        self, gtid: Gtid, table: str, images: Sequence[tuple[Key, Mapping[str, Any] | None]]
    ) -> None:
        """The keys ``gtid`` changed, in event order, each with its row before that event (None:
        absent); the first image of a key after the position is its row there (module docstring)."""
        known = not self._blind(table)
        changed = self._keys[table].setdefault(gtid, set())
        for key, row in images:
            changed.add(key)
            self._add_first(table, key, FirstChange(gtid, row, known))

    def _add_first(self, table: str, key: Key, first: FirstChange) -> None:
        if key not in self._first[table]:  # the first change after the position wins, for good
            self._first[table][key] = first
            self._first_order[table].append(key)

    def record_schema_change(self, gtid: Gtid, tables: Iterable[str]) -> None:
        for table in tables:
            self._schema_changes[table].append(gtid)

    def record_statement_change(self, gtid: Gtid, tables: Iterable[str]) -> None:
        for table in tables:
            self._statement_changes[table].append(gtid)

    def _blind(self, table: str) -> bool:
        return bool(self._schema_changes.get(table) or self._statement_changes.get(table))

    def keys_changed(self, table: str, window: GtidSet) -> set[Key]:
        """Keys of ``table`` a transaction in ``window - position`` changed."""
        changed: set[Key] = set()
        for gtid, keys in self._keys.get(table, {}).items():
            if gtid in window and gtid not in self.position:
                changed |= keys
        return changed

    def rows_at_position(self, table: str, since: int = 0) -> dict[Key, Mapping[str, Any] | None]:
        """Every changed key whose row at the position is known: that row (None: it did not exist);
        ``since``: only keys recorded after the first ``since`` (a key's entry never changes)."""
        first = self._first.get(table, {})
        return {key: first[key].row for key in self._first_order.get(table, [])[since:] if first[key].known}

    def recorded(self, table: str) -> int:
        """How many keys of ``table`` have a first change recorded (see ``since``)."""
        return len(self._first_order.get(table, []))

    def left_out(self, table: str, window: GtidSet) -> set[Key]:
        """Keys a transaction in ``window - position`` changed whose row at the position is unknown."""
        unknown = {key for key, first in self._first.get(table, {}).items() if not first.known}
        return unknown & self.keys_changed(table, window) if unknown else set()

    def schema_changes(self, table: str, window: GtidSet) -> list[Gtid]:
        """GTIDs in ``window - position`` of DDL statements that may have changed ``table``."""
        return self._within(self._schema_changes.get(table, []), window)

    def statement_changes(self, table: str, window: GtidSet) -> list[Gtid]:
        """GTIDs in ``window - position`` of statement-logged changes of ``table`` (rows unknown)."""
        return self._within(self._statement_changes.get(table, []), window)

    def _within(self, gtids: Sequence[Gtid], window: GtidSet) -> list[Gtid]:
        return [gtid for gtid in gtids if gtid in window and gtid not in self.position]


def rows_table(columns: Sequence[ColumnType], rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Canonical binlog images as the source's rows in Delta's storage types (what a chunk read gives)."""
    return delta_rows(columns, to_arrow_table(columns, rows))


class BinlogFollower:
    """Reads the binlog after a position, stretch by stretch, into a :class:`ChangedKeys`.

    ``key_columns`` maps each tracked ``schema.table`` to its key's column types: binlog key values
    are converted as the rows' keys are (:func:`~.comparable.delta_keys`).
    """

    def __init__(
        self,
        endpoint: MySqlEndpoint,
        position: GtidSet,
        key_columns: Mapping[str, Sequence[ColumnType]],
        *,
        server_id: int | None = None,
    ) -> None:
        self.changed = ChangedKeys(position)
        self.read_up_to = position
        self.key_columns = dict(key_columns)
        self.transactions = 0
        self._reader = BinlogReader(
            endpoint.with_database(None),
            tables=sorted(self.key_columns),
            server_id=server_id,
            evolve_schema=True,
            mark_statement_changes=True,
        )

    def advance_to(self, target: GtidSet) -> None:
        """Read every transaction of ``target`` not read yet (and what the binlog holds before them)."""
        if target.issubset(self.read_up_to):
            return
        for transaction in self._reader.read(self.read_up_to, UntilGtidSet(target)):
            self._record(transaction)
        self.read_up_to = self._reader.position

    def _record(self, transaction: Transaction) -> None:
        self.transactions += 1
        if transaction.schema_change is not None:
            self.changed.record_schema_change(transaction.gtid, transaction.schema_change.tables)
            return
        for statement in transaction.statement_changes:
            self.changed.record_statement_change(transaction.gtid, statement.tables)
        images: dict[str, list[tuple[tuple[Any, ...], Mapping[str, Any] | None]]] = defaultdict(list)
        for change in transaction.changes:
            name = change.shape.qualified_name
            key = self.key_columns.get(name)
            if key is None:
                continue
            names = [column.name for column in key]
            try:
                if change.op is not Op.INSERT and change.before is not None:
                    images[name].append((tuple(change.before[column] for column in names), change.before))
                if change.op is not Op.DELETE and change.after is not None:
                    images[name].append((tuple(change.after[column] for column in names), None))
            except KeyError:  # the row has no such key column any more: the table was redefined
                self.changed.record_schema_change(transaction.gtid, [name])
        for name, changes in images.items():
            keys = delta_key_list(self.key_columns[name], [key for key, _ in changes])
            self.changed.record_images(
                transaction.gtid, name, [(key, row) for key, (_, row) in zip(keys, changes, strict=True)]
            )
