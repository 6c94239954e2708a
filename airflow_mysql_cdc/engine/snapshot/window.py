"""One snapshot window: a chunk read without locks and made consistent as of a GTID watermark.

Invariant: the rows a window returns are exactly the chunk's rows as of its high watermark ``H``:
the state after every transaction in ``H`` and none other. It holds because

1. ``L = @@gtid_executed`` is read first, then the chunk is read by one autocommit ``SELECT``
   (InnoDB gives that statement a fresh consistent read view), then ``H = @@gtid_executed``. MySQL
   adds a transaction's GTID to ``gtid_executed`` after its storage-engine commit, so every
   transaction in ``L`` is visible to the read view, and every transaction visible to it is
   in ``H`` or commits concurrently with the ``H`` read (see 3).
2. Reconciliation replays, in binlog order, every transaction in ``H - L`` onto the rows read,
   keeping only changes to keys inside the chunk (a key-changing update is a delete of the old key
   and an insert of the new one, each judged against the chunk). Changes are full row images, so
   replaying one the ``SELECT`` already saw rewrites the same value, and the last change to a key
   in ``H - L`` decides its value at ``H``. A key no transaction in ``H - L`` touched had the same
   value at ``L``, at the read view and at ``H``.
3. A transaction the read view saw but whose GTID reached ``gtid_executed`` only after the ``H``
   read is not in ``H``: MySQL's commit stage commits a whole group in the storage engine and only
   then adds the group's GTIDs to ``gtid_executed`` (``process_commit_stage_queue``), so a read
   view can see a transaction ``H`` lacks. The streaming side applies it again later, which, by the
   same argument, rewrites values the chunk already has before the later changes land. Such a
   transaction was written to the binlog, with its immediate commit timestamp, before its engine
   commit, so its timestamp is at most the server's clock at the ``H`` read (``high_read_us``): a
   change outside ``H`` that is not later than that may already be in the chunk, and the per-batch
   check of the lake counts its key's past as unknown (:mod:`.change_filter`), instead of stopping
   the table over a DELETE that finds its row already gone.
4. ``H - L`` with more than one server UUID has no single binlog order we can replay before the
   stream does (multi-source writes); the window is redone, up to ``max_attempts`` times.

The streaming side then skips a change to a key of chunk ``i`` exactly when its GTID is in
``H_i`` (see :mod:`.change_filter`).

Rows stay columnar from the fetch on: the ``SELECT`` runs without PyMySQL's decoders and Arrow
parses each column (:mod:`airflow_mysql_cdc.engine.mysql.select_arrow`), which made a window cheaper than
a plain ``SELECT *`` fetched with PyMySQL's default converters. Reconciliation works on the keys
``H - L`` touched only: the last change to each such key decides its row (or its absence), so the
chunk's rows with those keys are dropped and the changed rows appended, and no other row is ever
turned back into Python values.

The select list is :func:`~airflow_mysql_cdc.engine.mysql.normalise.select_list`, which reads
FLOAT and DOUBLE as ``CAST(x AS DOUBLE)``: their plain text is rounded (a FLOAT to 6 digits), the
cast's is the stored value, as the binlog path has it, so a row's lake value does not depend on
which path wrote it (``test_float_heavy_table_snapshot_then_streamed_changes_equal_the_source_bit_for_bit``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pymysql

from airflow_mysql_cdc.engine.binlog.changes import Op
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import UntilGtidSet
from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.mysql.normalise import SNAPSHOT_SESSION_STATEMENTS, select_list
from airflow_mysql_cdc.engine.mysql.schema import Column, TableRef, quote_identifier
from airflow_mysql_cdc.engine.mysql.select_arrow import TEXT_RESULT_CONVERSIONS, text_rows_to_arrow
from airflow_mysql_cdc.engine.mysql.types import ColumnType, to_arrow_array
from airflow_mysql_cdc.engine.runtime.gc_pause import CollectorPaused
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk, range_predicate
from airflow_mysql_cdc.engine.snapshot.key_order import KeyOrder
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import RowValues

log = logging.getLogger(__name__)


class WindowRetriesExhaustedError(CdcError, RuntimeError):
    """Every attempt saw writes from several server UUIDs between the watermarks."""


@dataclass
class ChunkSnapshot:
    table: TableRef
    chunk: Chunk
    low_watermark: GtidSet
    high_watermark: GtidSet
    rows: pa.Table
    """The chunk's rows as of the high watermark: one canonical Arrow column per table column."""
    high_read_us: int | None = None
    """The server's clock (µs since the epoch) when ``H`` was read: no transaction the chunk's
    ``SELECT`` saw has a later immediate commit timestamp (module doc, point 3)."""
    attempts: int = 1
    reconciled_changes: int = 0
    duration_s: float = 0.0


class ChunkRange:
    """Answers "is this key in the chunk?" with MySQL's ordering (see :mod:`.key_order`)."""

    def __init__(self, chunk: Chunk, order: KeyOrder) -> None:
        bounds = [bound for bound in (chunk.lower, chunk.upper) if bound is not None]
        sorted_bounds = iter(order.sort_keys(bounds))
        self.lower = next(sorted_bounds) if chunk.lower is not None else None
        self.upper = next(sorted_bounds) if chunk.upper is not None else None
        self.order = order

    def contains_all(self, keys: Sequence[tuple[Any, ...]]) -> list[bool]:
        return [
            (self.lower is None or self.lower < sort_key) and (self.upper is None or sort_key <= self.upper)
            for sort_key in self.order.sort_keys(keys)
        ]


def _gtid_executed(cursor) -> GtidSet:
    cursor.execute("SELECT @@GLOBAL.gtid_executed")
    return GtidSet.parse(cursor.fetchone()[0])


def _high_watermark(cursor) -> tuple[GtidSet, int]:
    """``@@gtid_executed`` and the server's clock in µs, read by one statement (module doc, point 3)."""
    cursor.execute("SELECT @@GLOBAL.gtid_executed, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS UNSIGNED)")
    executed, now_us = cursor.fetchone()
    return GtidSet.parse(_text(executed)), int(_text(now_us))


def _text(value: Any) -> str:
    """A value of a connection without result decoders (bytes) or with them (str or int)."""
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


def open_window_connection(endpoint: MySqlEndpoint) -> pymysql.connections.Connection:
    """A connection windows can share: no result decoders (see
    :mod:`~airflow_mysql_cdc.engine.mysql.select_arrow`), a UTC session.

    Windows run one after another in one process reuse it: opening a connection (PyMySQL builds a
    TLS context and shakes hands) took 26 ms, a sixth of a 20,000-row window.
    """
    connection = endpoint.connect(conv=TEXT_RESULT_CONVERSIONS)
    with connection.cursor() as cursor:
        for statement in SNAPSHOT_SESSION_STATEMENTS:
            cursor.execute(statement)
    return connection


def read_window(
    endpoint: MySqlEndpoint,
    table: TableRef,
    columns: Sequence[ColumnType],
    key: Sequence[str],
    key_columns: Sequence[Column],
    chunk: Chunk,
    *,
    reader_server_id: int | None = None,
    max_attempts: int = 5,
    connection: pymysql.connections.Connection | None = None,
) -> ChunkSnapshot:
    """Snapshot one chunk as of its high watermark (see the module docstring for why it is exact).

    ``connection``, from :func:`open_window_connection`, is used instead of a new one.
    """
    if connection is None:
        with open_window_connection(endpoint) as own_connection:
            return read_window(
                endpoint, table, columns, key, key_columns, chunk,
                reader_server_id=reader_server_id, max_attempts=max_attempts, connection=own_connection,
            )  # fmt: skip
    started = time.monotonic()
    where, params = range_predicate(key_columns, chunk)
    # Qualified: a bare name in ORDER BY means the select list's alias, and a FLOAT or DOUBLE key's
    # alias is its CAST, which MySQL sorts instead of walking the key's index.
    order_by = ", ".join(f"{table.quoted}.{quote_identifier(name)}" for name in key)
    select = f"SELECT {select_list(columns)} FROM {table.quoted} WHERE {where} ORDER BY {order_by}"
    # Fetching builds a tuple per row, and every 700 of them start a cyclic collection whose older
    # generations walk the whole heap (PyArrow, PySpark): 15% of a window's time, for rows that hold
    # no cycles. The collector is paused while the window fetches and converts.
    with connection.cursor() as cursor, CollectorPaused():
        attempts = 0
        while True:
            attempts += 1
            low = _gtid_executed(cursor)
            cursor.execute(select, params)
            fetched = cursor.fetchall()
            high, read_us = _high_watermark(cursor)
            if len((high - low).uuids) <= 1:
                break
            log.info("window %s#%d: writes of several servers between watermarks; redo", table, chunk.index)
            if attempts >= max_attempts:
                raise WindowRetriesExhaustedError(
                    f"{max_attempts} windows of {table} chunk {chunk.index} each saw transactions of several "
                    "server UUIDs between their watermarks; snapshot from a server with a single writer"
                )
        rows = text_rows_to_arrow(columns, fetched)
        snapshot = ChunkSnapshot(table, chunk, low, high, rows, read_us, attempts)
        del fetched
    if high - low:
        chunk_range = ChunkRange(chunk, KeyOrder(connection, key_columns))
        _reconcile(snapshot, endpoint, columns, key, chunk_range, reader_server_id)
    snapshot.duration_s = time.monotonic() - started
    return snapshot


def _reconcile(
    snapshot: ChunkSnapshot,
    endpoint: MySqlEndpoint,
    columns: Sequence[ColumnType],
    key: Sequence[str],
    chunk_range: ChunkRange,
    reader_server_id: int | None,
) -> None:
    """Replay ``H - L`` onto the chunk rows, in binlog order, keeping changes to the chunk's keys."""
    name = str(snapshot.table)
    # every key a change inside the chunk touched: its row at H, or None if it is absent then
    rows_at_high: dict[tuple[Any, ...], RowValues | None] = {}
    reader = BinlogReader(endpoint.with_database(None), tables=[name], server_id=reader_server_id)
    for transaction in reader.read(snapshot.low_watermark, UntilGtidSet(snapshot.high_watermark)):
        changes = [c for c in transaction.changes if c.shape.qualified_name == name]
        if not changes:
            continue
        keyed: list[tuple[tuple[Any, ...], RowValues | None]] = []
        for change in changes:
            if change.op is not Op.INSERT and change.before is not None:
                keyed.append((tuple(change.before[c] for c in key), None))
            if change.op is not Op.DELETE and change.after is not None:
                keyed.append((tuple(change.after[c] for c in key), dict(change.after)))
        inside = chunk_range.contains_all([row_key for row_key, _ in keyed])
        for (row_key, row), in_chunk in zip(keyed, inside, strict=True):
            if in_chunk:
                snapshot.reconciled_changes += 1
                rows_at_high[row_key] = row
    if rows_at_high:
        snapshot.rows = replace_rows(snapshot.rows, columns, key, rows_at_high)


def replace_rows(
    rows: pa.Table,
    columns: Sequence[ColumnType],
    key: Sequence[str],
    rows_at_high: dict[tuple[Any, ...], RowValues | None],
) -> pa.Table:
    """``rows`` without the keys of ``rows_at_high``, plus its rows that are not None.

    Keys are compared as Arrow gives them back to Python, on both sides: a canonical value and its
    Arrow value do not always compare equal in Python (a naive UTC datetime and the aware one a
    ``timestamp[us, UTC]`` column returns), but two canonical values equal as Arrow values are
    equal after the same conversion.
    """
    by_name = {column.name: column for column in columns}
    touched = list(rows_at_high)
    touched_keys = set(
        zip(
            *(to_arrow_array(by_name[c], [k[i] for k in touched]).to_pylist() for i, c in enumerate(key)),
            strict=True,
        )
    )
    row_keys = zip(*(rows.column(c).to_pylist() for c in key), strict=True)
    kept = rows.filter(pa.array([row_key not in touched_keys for row_key in row_keys], pa.bool_()))
    changed = [row for row in rows_at_high.values() if row is not None]
    if not changed:
        return kept
    changed_columns = {
        column.name: to_arrow_array(column, (row.get(column.name) for row in changed)) for column in columns
    }
    return pa.concat_tables([kept, pa.table(changed_columns).cast(kept.schema)])
