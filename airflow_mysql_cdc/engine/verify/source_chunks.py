"""A chunk of a source table read without locks, bracketed by two ``gtid_executed`` reads.

Invariant: the rows returned are the chunk's rows in one InnoDB read view that saw every
transaction of ``low_watermark`` (``gtid_executed`` read before the ``SELECT``: MySQL adds a GTID
there only after the engine commit) and possibly some later ones; which later ones is settled by
the binlog (:mod:`.run`). The read is the snapshot window's read without its reconciliation
(:mod:`..snapshot.window`, point 1): the same select list, session and Arrow conversion, so a row
read here is the row a snapshot would write. Nothing is written; rereading is always safe.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pymysql

from airflow_mysql_cdc.engine.mysql.normalise import select_list
from airflow_mysql_cdc.engine.mysql.schema import Column, TableRef, quote_identifier
from airflow_mysql_cdc.engine.mysql.select_arrow import text_rows_to_arrow
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.runtime.gc_pause import CollectorPaused
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk, range_predicate
from airflow_mysql_cdc.engine.values.gtid import GtidSet


@dataclass(frozen=True)
class SourceChunk:
    chunk: Chunk
    low_watermark: GtidSet
    high_watermark: GtidSet
    rows: pa.Table
    """Canonical Arrow columns, one per source column."""
    read_at: float
    """``time.monotonic()`` when the ``SELECT`` returned (the settle wait counts from it)."""


def gtid_executed(connection: pymysql.connections.Connection) -> GtidSet:
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@GLOBAL.gtid_executed")
        row = cursor.fetchone()
    text = row[0]
    return GtidSet.parse(text.decode() if isinstance(text, bytes) else text)


def read_source_chunk(
    connection: pymysql.connections.Connection,
    table: TableRef,
    columns: Sequence[ColumnType],
    key: Sequence[str],
    key_columns: Sequence[Column],
    chunk: Chunk,
) -> SourceChunk:
    """The chunk's rows between two watermarks, on a connection from
    :func:`~airflow_mysql_cdc.engine.snapshot.window.open_window_connection`."""
    where, params = range_predicate(key_columns, chunk)
    order_by = ", ".join(f"{table.quoted}.{quote_identifier(name)}" for name in key)
    select = f"SELECT {select_list(columns)} FROM {table.quoted} WHERE {where} ORDER BY {order_by}"
    with CollectorPaused():
        low = gtid_executed(connection)
        with connection.cursor() as cursor:
            cursor.execute(select, params)
            fetched = cursor.fetchall()
        read_at = time.monotonic()
        high = gtid_executed(connection)
        rows = text_rows_to_arrow(columns, fetched)
    return SourceChunk(chunk, low, high, rows, read_at)
