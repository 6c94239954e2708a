"""A window's rows as Arrow: reconciliation replaces touched keys only, and IPC carries windows intact."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.select_arrow import text_rows_to_arrow
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.window import ChunkSnapshot, replace_rows
from airflow_mysql_cdc.engine.snapshot.window_ipc import decode_window, encode_window
from airflow_mysql_cdc.engine.values.gtid import GtidSet

COLUMNS = (
    ColumnType("at", "timestamp", fsp=6),
    ColumnType("n", "uint", bits=64),
    ColumnType("v", "text"),
    ColumnType("doc", "json"),
)
KEY = ("at", "n")
UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def selected_rows() -> pa.Table:
    """Three rows as the columnar SELECT path builds them (text as MySQL sends it)."""
    return text_rows_to_arrow(
        COLUMNS,
        [
            ("2024-01-01 00:00:00.000001", "18446744073709551615", "a", '{"k": 1}'),
            ("2024-01-01 00:00:00.000002", "1", "b", None),
            ("2024-01-01 00:00:00.000003", "2", "c", "[]"),
        ],
    )


def change_row(microsecond: int, n: int, v: str) -> dict:
    """A row as the binlog path gives it: canonical values (naive UTC datetime, int)."""
    return {"at": datetime.datetime(2024, 1, 1, 0, 0, 0, microsecond), "n": n, "v": v, "doc": None}


def test_reconciliation_replaces_and_deletes_only_the_touched_keys_of_a_timestamp_and_unsigned_key():
    rows_at_high = {
        (datetime.datetime(2024, 1, 1, 0, 0, 0, 1), 18446744073709551615): change_row(
            1, 18446744073709551615, "A"
        ),
        (datetime.datetime(2024, 1, 1, 0, 0, 0, 2), 1): None,
        (datetime.datetime(2024, 1, 1, 0, 0, 0, 9), 9): change_row(9, 9, "new"),
        (datetime.datetime(2024, 1, 1, 0, 0, 0, 8), 8): None,  # inserted then deleted between L and H
    }
    result = replace_rows(selected_rows(), COLUMNS, KEY, rows_at_high)
    assert result.schema == selected_rows().schema
    assert sorted((row["n"], row["v"]) for row in result.to_pylist()) == [
        (decimal.Decimal(2), "c"),
        (decimal.Decimal(9), "new"),
        (decimal.Decimal(18446744073709551615), "A"),
    ]


def test_a_window_survives_its_ipc_stream_unchanged():
    window = ChunkSnapshot(
        table=TableRef("shop", "orders"),
        chunk=Chunk(3, (datetime.datetime(2024, 1, 1), b"\x00k"), (datetime.datetime(2024, 2, 1), b"z")),
        low_watermark=GtidSet.parse(f"{UUID}:1-10"),
        high_watermark=GtidSet.parse(f"{UUID}:1-12"),
        rows=selected_rows(),
        attempts=2,
        reconciled_changes=5,
        duration_s=0.25,
    )
    decoded = decode_window(encode_window(window))
    assert decoded.rows.equals(window.rows)
    assert decoded.rows.schema.metadata is None
    assert (decoded.table, decoded.chunk, decoded.low_watermark, decoded.high_watermark) == (
        window.table,
        window.chunk,
        window.low_watermark,
        window.high_watermark,
    )
    assert (decoded.attempts, decoded.reconciled_changes, decoded.duration_s) == (2, 5, 0.25)


def test_an_arrow_stream_that_is_not_a_window_is_refused():
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, selected_rows().schema) as writer:
        writer.write_table(selected_rows())
    with pytest.raises(ValueError, match="not a snapshot window"):
        decode_window(sink.getvalue().to_pybytes())
