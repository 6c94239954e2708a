"""A row read by SELECT and the same row read from its binlog image give identical Arrow values."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

from airflow_mysql_cdc.engine.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.gtid import GtidSet
from airflow_mysql_cdc.engine.mysql_types import (
    SNAPSHOT_SESSION_STATEMENTS,
    normalise_select_row,
    read_table_column_types,
    to_arrow_table,
)
from airflow_mysql_cdc.engine.select_arrow import TEXT_RESULT_CONVERSIONS, text_rows_to_arrow
from tests.integration.test_binlog_reader import gtid_executed, read_all, table_name
from tests.support.mysql import execute

pytestmark = pytest.mark.mysql

COLUMNS = """
    id INT PRIMARY KEY,
    i8 TINYINT, u8 TINYINT UNSIGNED, i16 SMALLINT, u16 SMALLINT UNSIGNED, i24 MEDIUMINT,
    u24 MEDIUMINT UNSIGNED, i32 INT, u32 INT UNSIGNED, i64 BIGINT, u64 BIGINT UNSIGNED,
    dec_small DECIMAL(5,2), dec_big DECIMAL(38,10), dec_huge DECIMAL(65,30), f FLOAT, d DOUBLE,
    dt DATE, dtm0 DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6), ts0 TIMESTAMP NULL, ts6 TIMESTAMP(6) NULL,
    tm TIME, tm2 TIME(2), yr YEAR,
    ch CHAR(5), vc VARCHAR(300), vc_latin1 VARCHAR(20) CHARACTER SET latin1, tx TEXT, mtx MEDIUMTEXT,
    bn BINARY(6), vb VARBINARY(10), bl BLOB, lbl LONGBLOB,
    j JSON, e ENUM('a', 'b''q', 'c'), s SET('x', 'y', 'z'), b1 BIT(1), b10 BIT(10), b64 BIT(64),
    g GEOMETRY, p POINT SRID 4326, poly POLYGON
"""

ROWS = [
    # extremes and ordinary values
    """(1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
        -9223372036854775808, 18446744073709551615, -999.99, 1234567890123456789012345678.0123456789,
        -12345678901234567890123456789012345.123456789012345678901234567890,
        1.1, 2.2250738585072014e-308, '2024-02-29', '2024-02-29 23:59:59', '1000-01-01 00:00:00.123',
        '9999-12-31 23:59:59.999999', '1970-01-01 00:00:01', '2038-01-19 03:14:07.999999',
        '-838:59:59', '12:34:56.78', 2155, 'ab  ', 'näive ✓ 😀', 'café', REPEAT('t', 1000), 'mid',
        0x616200, 0x00ff00, 0xdeadbeef, REPEAT(0x01, 70000),
        '{"b": [1, 2.5, "x", null, true, false], "a": {"ü": "😀"}, "n": -3}', 'b''q', 'z,x',
        b'1', b'1010101010', 0xFFFFFFFFFFFFFFFF,
        ST_GeomFromText('LINESTRING(0 0, 1 1)'), ST_GeomFromText('POINT(3 4)', 4326),
        ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))'))""",
    # zero values, zero dates and empty members (needs a permissive sql_mode)
    """(2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0.5, '0000-00-00', '0000-00-00 00:00:00',
        '2024-00-10 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00',
        '00:00:00', '-00:00:00.01', 0, '', '', '', '', '', '', '', '', '', '[]', '', '', b'0', b'0', 0,
        NULL, NULL, NULL)""",
    # every nullable column NULL
    "(3" + ", NULL" * 42 + ")",
]


def _select_both_ways(endpoint: MySqlEndpoint, query: str) -> tuple[pa.Table, pa.Table]:
    """The rows through the row mapping (PyMySQL's converters) and through the columnar path."""
    tables = []
    for conversions in ({}, {"conv": TEXT_RESULT_CONVERSIONS}):
        with endpoint.connect(**conversions) as connection, connection.cursor() as cursor:
            for statement in SNAPSHOT_SESSION_STATEMENTS:
                cursor.execute(statement)
            columns = read_table_column_types(cursor, endpoint.database, "t")
            cursor.execute(query)
            rows = cursor.fetchall()
        if conversions:
            tables.append(text_rows_to_arrow(columns, rows))
        else:
            tables.append(to_arrow_table(columns, [normalise_select_row(columns, row) for row in rows]))
    return tables[0], tables[1]


def write_every_type_rows(endpoint: MySqlEndpoint, *more_statements: str) -> GtidSet:
    """Table ``t`` with every type, its rows written after the returned position."""
    execute(endpoint, f"CREATE TABLE t ({COLUMNS})")
    start = gtid_executed(endpoint)
    execute(
        endpoint,
        "SET SESSION sql_mode = ''",
        *(f"INSERT INTO t VALUES {row}" for row in ROWS),
        # negative fractional TIME, which mysql-replication decodes wrongly without the fix
        "INSERT INTO t (id, tm, tm2) VALUES (4, '-00:00:01', '-12:34:56.78')",
        "INSERT INTO t (id, tm, tm2) VALUES (5, '-838:59:59', '-00:00:01.5')",
        # DECIMAL values inside a JSON document (from SQL expressions): the library decodes them as
        # Decimal, which the JSON encoder refused (found by scripts/benchmarks.py)
        "INSERT INTO t (id, j) VALUES (6, JSON_OBJECT('price', CAST(12.50 AS DECIMAL(10,2)), 'third', 1/3,"
        " 'big', CAST(123456789012345678901234567890.5 AS DECIMAL(31,1)), 'list', JSON_ARRAY(0.10 * 3)))",
        # a document that is the JSON literal null (the library read it as SQL NULL)
        "INSERT INTO t (id, j) VALUES (7, 'null')",
        *more_statements,
    )
    return start


def test_every_type_maps_to_identical_arrow_values_from_select_and_binlog(mysql_database: MySqlEndpoint):
    start = write_every_type_rows(mysql_database)

    with mysql_database.connect() as connection, connection.cursor() as cursor:
        for statement in SNAPSHOT_SESSION_STATEMENTS:
            cursor.execute(statement)
        select_columns = read_table_column_types(cursor, mysql_database.database, "t")
        cursor.execute("SELECT * FROM t ORDER BY id")
        selected = [normalise_select_row(select_columns, row) for row in cursor.fetchall()]

    transactions, _ = read_all(mysql_database, start, tables=[table_name(mysql_database, "t")])
    changes = [c for t in transactions for c in t.changes]
    binlog_columns = changes[0].shape.columns
    from_binlog = [dict(c.after) for c in changes]

    assert binlog_columns == select_columns
    for selected_row, binlog_row in zip(selected, from_binlog, strict=True):
        assert selected_row == binlog_row
    select_table = to_arrow_table(select_columns, selected)
    binlog_table = to_arrow_table(binlog_columns, from_binlog)
    assert select_table.schema == binlog_table.schema
    assert select_table.equals(binlog_table)
    row_path, columnar = _select_both_ways(mysql_database, "SELECT * FROM t ORDER BY id")
    assert row_path.equals(select_table)
    assert columnar.schema == binlog_table.schema
    assert columnar.equals(binlog_table)

    expected_types = {
        "u64": pa.decimal128(20, 0),
        "u32": pa.uint32(),
        "i24": pa.int32(),
        "dec_big": pa.decimal128(38, 10),
        "f": pa.float32(),
        "dtm6": pa.timestamp("us"),
        "ts6": pa.timestamp("us", tz="UTC"),
        "tm2": pa.duration("us"),
        "yr": pa.int16(),
        "vc_latin1": pa.string(),
        "bn": pa.binary(),
        "j": pa.string(),
        "s": pa.string(),
        "b64": pa.uint64(),
        "poly": pa.binary(),
    }
    assert {name: binlog_table.schema.field(name).type for name in expected_types} == expected_types
    first = binlog_table.to_pylist()[0]
    assert first["u64"] == 18446744073709551615
    assert first["s"] == "x,z" and first["e"] == "b'q"
    assert first["bn"] == b"ab\x00\x00\x00\x00" and first["b10"] == 0b1010101010
    assert first["j"] == '{"a":{"ü":"😀"},"b":[1,2.5,"x",null,true,false],"n":-3}'
    zero = binlog_table.to_pylist()[1]
    assert zero["dt"] is None and zero["dtm0"] is None and zero["ts0"] is None and zero["dtm3"] is None
    assert zero["yr"] == 0 and zero["s"] == "" and zero["e"] == ""


def test_columnar_select_nulls_the_dates_python_cannot_hold_like_the_row_path(mysql_database: MySqlEndpoint):
    """Year 0 parses in Arrow but not in Python; Feb 30 (ALLOW_INVALID_DATES) parses in neither."""
    execute(
        mysql_database,
        "CREATE TABLE t (id INT PRIMARY KEY, d DATE, dt DATETIME(6), ts TIMESTAMP(3) NULL, z INT ZEROFILL,"
        " dz DECIMAL(6,2) ZEROFILL)",
        "SET SESSION sql_mode = 'ALLOW_INVALID_DATES'",
        "INSERT INTO t VALUES (1, '0000-01-01', '0000-03-04 05:06:07.5', NULL, 7, 1.5),"
        " (2, '2024-02-30', '2024-02-30 00:00:00', '2024-02-29 01:02:03.004', 0, 0),"
        " (3, '0001-01-01', '0001-01-01 00:00:00', '1970-01-01 00:00:01', NULL, NULL)",
    )
    row_path, columnar = _select_both_ways(mysql_database, "SELECT * FROM t ORDER BY id")
    assert columnar.equals(row_path)
    assert columnar.column("d").to_pylist()[:2] == [None, None]
    assert columnar.column("z").to_pylist() == [7, 0, None]
    # the first day Python holds goes through Arrow's parser
    row_path, columnar = _select_both_ways(mysql_database, "SELECT * FROM t WHERE id = 3")
    assert columnar.equals(row_path)
    assert columnar.column("d").to_pylist() == [datetime.date(1, 1, 1)]
