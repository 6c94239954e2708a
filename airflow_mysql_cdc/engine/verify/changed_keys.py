"""Which keys of which tables each transaction after the position changed: what a verification leaves out.

Invariant: for a transaction ``T`` read from the binlog after the position ``E``, every key whose
row ``T`` inserted, updated (before *and* after image: a key-changing update moves a row between
keys) or deleted is recorded under ``T``'s GTID, and a DDL statement that may change a table marks
the table under that GTID. :meth:`ChangedKeys.keys_changed` then answers "which keys of this table
did a transaction of ``window - E`` touch?", and every other key of the table holds, in a read that
saw no transaction outside ``window``, exactly its value at ``E`` (module :mod:`.run`, point 1).

:class:`BinlogFollower` fills a :class:`ChangedKeys` by reading the binlog from ``E`` on, one
stretch at a time: each :meth:`BinlogFollower.advance_to` continues where the last stretch ended,
so a verification reads every transaction after ``E`` once, however many chunks it checks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from airflow_mysql_cdc.engine.binlog.changes import Op, Transaction
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import UntilGtidSet
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet
from airflow_mysql_cdc.engine.verify.comparable import Key, delta_keys


class ChangedKeys:
    """Keys changed per table and GTID after a position, and the GTIDs of DDL per table."""

    def __init__(self, position: GtidSet) -> None:
        self.position = position
        self._keys: dict[str, dict[Gtid, set[Key]]] = defaultdict(dict)
        self._schema_changes: dict[str, list[Gtid]] = defaultdict(list)

    def record(self, gtid: Gtid, table: str, keys: Iterable[Key]) -> None:
        self._keys[table].setdefault(gtid, set()).update(keys)

    def record_schema_change(self, gtid: Gtid, tables: Iterable[str]) -> None:
        for table in tables:
            self._schema_changes[table].append(gtid)

    def keys_changed(self, table: str, window: GtidSet) -> set[Key]:
        """Keys of ``table`` a transaction in ``window - position`` changed."""
        changed: set[Key] = set()
        for gtid, keys in self._keys.get(table, {}).items():
            if gtid in window and gtid not in self.position:
                changed |= keys
        return changed

    def schema_changes(self, table: str, window: GtidSet) -> list[Gtid]:
        """GTIDs in ``window - position`` of DDL statements that may have changed ``table``."""
        return [
            gtid
            for gtid in self._schema_changes.get(table, [])
            if gtid in window and gtid not in self.position
        ]


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
        images: dict[str, list[Sequence[object]]] = defaultdict(list)
        for change in transaction.changes:
            name = change.shape.qualified_name
            key = self.key_columns.get(name)
            if key is None:
                continue
            names = [column.name for column in key]
            try:
                if change.op is not Op.INSERT and change.before is not None:
                    images[name].append(tuple(change.before[column] for column in names))
                if change.op is not Op.DELETE and change.after is not None:
                    images[name].append(tuple(change.after[column] for column in names))
            except KeyError:  # the row has no such key column any more: the table was redefined
                self.changed.record_schema_change(transaction.gtid, [name])
        for name, keys in images.items():
            self.changed.record(transaction.gtid, name, delta_keys(self.key_columns[name], keys))
