"""A row read by SELECT and the same row read from its binlog image give identical Arrow values."""

from __future__ import annotations

import datetime
import decimal
import json
import random
import struct
from typing import Any

import pyarrow as pa
import pytest

from airflow_mysql_cdc.engine.lake.compare import source_table
from airflow_mysql_cdc.engine.lake.table_shape import Compatibility, Shape, compatibility
from airflow_mysql_cdc.engine.mysql.definition import TableDefinition, read_definition
from airflow_mysql_cdc.engine.mysql.normalise import (
    SNAPSHOT_SESSION_STATEMENTS,
    normalise_select_row,
    select_list,
)
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.select_arrow import TEXT_RESULT_CONVERSIONS, text_rows_to_arrow
from airflow_mysql_cdc.engine.mysql.types import read_table_column_types, to_arrow_table
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.key_order import KeyOrder, read_key_columns
from airflow_mysql_cdc.engine.snapshot.window import read_window
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.integration.test_binlog_reader import gtid_executed, read_all, table_name
from tests.support.exact_numbers import (
    FLOAT32_EDGES,
    FLOAT64_EDGES,
    decimal_edges,
    float32_bits,
    float64_bits,
    random_decimal,
    random_float32,
    random_float64,
)
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


def _select_both_ways(endpoint: MySqlEndpoint, where: str = "TRUE") -> tuple[pa.Table, pa.Table]:
    """Rows of ``t`` through the row mapping (PyMySQL's converters) and through the columnar path."""
    tables = []
    for conversions in ({}, {"conv": TEXT_RESULT_CONVERSIONS}):
        with endpoint.connect(**conversions) as connection, connection.cursor() as cursor:
            for statement in SNAPSHOT_SESSION_STATEMENTS:
                cursor.execute(statement)
            columns = read_table_column_types(cursor, endpoint.database, "t")
            cursor.execute(f"SELECT {select_list(columns)} FROM t WHERE {where} ORDER BY id")
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
        cursor.execute(f"SELECT {select_list(select_columns)} FROM t ORDER BY id")
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
    row_path, columnar = _select_both_ways(mysql_database)
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


def test_a_recorded_definition_of_every_type_reads_back_as_the_same_columns(mysql_database: MySqlEndpoint):
    """What a snapshot records (:meth:`TableDefinition.to_json`) is compared with the table later."""
    write_every_type_rows(mysql_database)
    definition = read_definition(mysql_database, TableRef(mysql_database.database, "t"))
    assert definition is not None
    back = TableDefinition.from_json(json.loads(json.dumps(definition.to_json())))
    assert back.column_types == definition.column_types
    verdict = compatibility(Shape.of_definition(definition), Shape.of_definition(back))
    assert verdict.reason is Compatibility.SAME


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
    row_path, columnar = _select_both_ways(mysql_database)
    assert columnar.equals(row_path)
    assert columnar.column("d").to_pylist()[:2] == [None, None]
    assert columnar.column("z").to_pylist() == [7, 0, None]
    # the first day Python holds goes through Arrow's parser
    row_path, columnar = _select_both_ways(mysql_database, "id = 3")
    assert columnar.equals(row_path)
    assert columnar.column("d").to_pylist() == [datetime.date(1, 1, 1)]


# --- FLOAT, DOUBLE and DECIMAL: every path reads the stored value, bit for bit ---------------------

EXACT_COLUMNS = """
    id INT PRIMARY KEY, f FLOAT, d DOUBLE, f_scaled FLOAT(7,4), d_scaled DOUBLE(12,2), d_wide DOUBLE(255,30),
    dec_wide DECIMAL(65,30), dec_int DECIMAL(65,0), dec_frac DECIMAL(30,30), dec_narrow DECIMAL(38,10)
"""
EXACT_DECIMALS = {"dec_wide": (65, 30), "dec_int": (65, 0), "dec_frac": (30, 30), "dec_narrow": (38, 10)}
EXACT_ROWS = 1500
EXACT_NAMES = ("id", "f", "d", "f_scaled", "d_scaled", "d_wide", *EXACT_DECIMALS)
UNSCALED_NAMES = ("id", "f", "d", *EXACT_DECIMALS)


def _exact_rows(rng: random.Random) -> list[dict[str, Any]]:
    """Edges first, then random bit patterns and full-precision decimals; the last row is all NULL."""
    rows = []
    for row_id in range(1, EXACT_ROWS + 1):
        index = row_id - 1
        row: dict[str, Any] = {
            "id": row_id,
            "f": FLOAT32_EDGES[index] if index < len(FLOAT32_EDGES) else random_float32(rng),
            "d": FLOAT64_EDGES[index] if index < len(FLOAT64_EDGES) else random_float64(rng),
            # MySQL rounds these to their scale on insert: their stored value is what the binlog holds
            "f_scaled": rng.uniform(-999.9999, 999.9999),
            "d_scaled": rng.uniform(-1, 1) * 10.0 ** rng.randint(-2, 9),
            "d_wide": rng.uniform(-1, 1) * 10.0 ** rng.randint(-40, 20),
        }
        for name, (precision, scale) in EXACT_DECIMALS.items():
            edges = decimal_edges(precision, scale)
            row[name] = edges[index] if index < len(edges) else random_decimal(rng, precision, scale)
        rows.append(row)
    rows.append({"id": EXACT_ROWS + 1} | {name: None for name in rows[0] if name != "id"})
    return rows


def _parameter(value: Any) -> Any:
    # str(Decimal) switches to exponent notation (1.5E-7), which MySQL reads as a double literal
    return f"{value:f}" if isinstance(value, decimal.Decimal) else value


def write_exact_table(endpoint: MySqlEndpoint) -> tuple[GtidSet, list[dict[str, Any]]]:
    """Table ``exact`` written in one transaction after the returned position; the rows as inserted.

    A float parameter is sent as its shortest round-trip text (PyMySQL's ``repr``) and a Decimal as
    a string of its digits, so the server parses exactly the value given (a FLOAT stores the
    float32 given).
    """
    execute(endpoint, f"CREATE TABLE exact ({EXACT_COLUMNS})")
    rows = _exact_rows(random.Random(13))
    names = list(rows[0])
    start = gtid_executed(endpoint)
    with endpoint.connect(autocommit=False) as connection, connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO exact ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))})",
            [tuple(_parameter(row[name]) for name in names) for row in rows],
        )
        connection.commit()
    return start, rows


def exact_view(row: dict[str, Any], names: tuple[str, ...] = EXACT_NAMES) -> tuple[Any, ...]:
    """A row by bit pattern (floats) and by exact value (decimals, which the lake may keep as text)."""
    float32_column = {"f", "f_scaled"}

    def exact(name: str, value: Any) -> Any:
        if value is None:
            return None
        if name in EXACT_DECIMALS:
            return decimal.Decimal(value)
        if name == "id":
            return value
        return float32_bits(value) if name in float32_column else float64_bits(value)

    return tuple(exact(name, row[name]) for name in names)


def _binlog_rows(endpoint: MySqlEndpoint, start: GtidSet, table: str) -> list[dict[str, Any]]:
    transactions, _ = read_all(endpoint, start, tables=[table_name(endpoint, table)])
    return sorted((dict(change.after) for t in transactions for change in t.changes), key=lambda r: r["id"])


def _snapshot_window_rows(endpoint: MySqlEndpoint, table: str) -> list[dict[str, Any]]:
    """The whole table read as one snapshot window, exactly as a snapshot reads a chunk."""
    ref = TableRef(endpoint.database, table)
    with endpoint.connect() as connection, connection.cursor() as cursor:
        columns = read_table_column_types(cursor, ref.schema, ref.table)
        key_columns = read_key_columns(cursor, ref, ("id",))
    window = read_window(endpoint, ref, columns, ("id",), key_columns, Chunk(0, None, None))
    return window.rows.to_pylist()


def _mismatches(expected: list[tuple[Any, ...]], actual: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    assert len(actual) == len(expected)
    return [(want, got) for want, got in zip(expected, actual, strict=True) if want != got][:5]


def test_snapshot_comparison_and_binlog_read_floats_doubles_decimals_bit_for_bit(
    mysql_database: MySqlEndpoint,
):
    """A FLOAT 568054.875 was read by the snapshot as 568055 (MySQL's 6-digit text) while the binlog
    path stored the exact value: the lake's value depended on which path wrote the row last."""
    start, inserted = write_exact_table(mysql_database)

    binlog_rows = _binlog_rows(mysql_database, start, "exact")
    from_binlog = [exact_view(row) for row in binlog_rows]
    from_snapshot = [exact_view(row) for row in _snapshot_window_rows(mysql_database, "exact")]
    compared = source_table(mysql_database, mysql_database.database, "exact").to_pylist()
    from_comparison = [exact_view(row) for row in sorted(compared, key=lambda r: r["id"])]

    # the binlog holds the stored values; columns without a scale store exactly what was inserted
    as_inserted = [exact_view(row, UNSCALED_NAMES) for row in inserted]
    assert _mismatches(as_inserted, [exact_view(row, UNSCALED_NAMES) for row in binlog_rows]) == []
    assert _mismatches(from_binlog, from_snapshot) == []
    assert _mismatches(from_binlog, from_comparison) == []
    negative_zero = next(row for row in from_snapshot if row[0] == 2)  # the second edges; MySQL keeps -0.0
    assert (negative_zero[1], negative_zero[2]) == (0x8000_0000, 0x8000_0000_0000_0000)


def test_mysql_text_rounds_float_and_scaled_double_but_not_double_or_decimal(
    mysql_database: MySqlEndpoint,
):
    """Why the snapshot reads FLOAT and DOUBLE through ``CAST(... AS DOUBLE)``: the plain text of a
    FLOAT has 6 significant digits and a DOUBLE(M,D) prints D decimals, which is not always the
    stored double, while a plain DOUBLE's text and a DECIMAL's are exact (and the CAST's, which the
    test above reads bit for bit). A FLOAT(M,D) happens to round-trip here; it is cast all the same."""
    start, _ = write_exact_table(mysql_database)
    stored = _binlog_rows(mysql_database, start, "exact")
    names = EXACT_NAMES[1:]
    with mysql_database.connect(conv=TEXT_RESULT_CONVERSIONS) as connection, connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(names)} FROM exact ORDER BY id")
        texts = cursor.fetchall()

    def parsed(name: str, text: str) -> Any:
        if name in EXACT_DECIMALS:
            return decimal.Decimal(text)
        return struct.unpack("<f", struct.pack("<f", float(text)))[0] if name.startswith("f") else float(text)

    inexact = {
        name: sum(
            exact_view({**row, name: parsed(name, text)}) != exact_view(row)
            for row, text in zip(stored, (cells[index] for cells in texts), strict=True)
            if text is not None
        )
        for index, name in enumerate(names)
    }
    assert inexact["f"] > EXACT_ROWS // 2
    assert min(inexact["d_scaled"], inexact["d_wide"]) > 0
    exact_text = ("d", *EXACT_DECIMALS)
    assert {name: inexact[name] for name in exact_text} == dict.fromkeys(exact_text, 0)


def test_enum_and_set_members_with_quotes_commas_and_capitals_are_one_model_on_every_path(
    mysql_database: MySqlEndpoint,
):
    """``information_schema`` prints a member ``x','y`` as ``'x'',''y'``: two parsers of that text disagreed
    (one split on ``','``), and one read the declaration lower-cased, so the snapshot and the binlog
    described the same column differently and a key of such an ENUM could not be ordered."""
    ref = TableRef(mysql_database.database, "members")
    start = gtid_executed(mysql_database)
    execute(
        mysql_database,
        "CREATE TABLE members (e ENUM('x'',''y', 'Red', 'z') NOT NULL, id INT NOT NULL,"
        " s SET('It''s', 'Blue', 'a''b', 'back\\\\slash'), PRIMARY KEY (e, id))",
        "INSERT INTO members VALUES ('x'',''y', 1, 'It''s,Blue'), ('Red', 2, 'a''b'), ('z', 3, ''),"
        " ('Red', 4, 'Blue,It''s,a''b,back\\\\slash')",
    )
    members = ("x','y", "Red", "z")

    with mysql_database.connect() as connection, connection.cursor() as cursor:
        select_columns = read_table_column_types(cursor, ref.schema, ref.table)
        key_columns = read_key_columns(cursor, ref, ("e", "id"))
        cursor.execute("SELECT e, id FROM members ORDER BY e, id")
        keys_in_mysql_order = [tuple(row) for row in cursor.fetchall()]
        order = KeyOrder(connection, key_columns)
        ordered_in_python = sorted(keys_in_mysql_order[::-1], key=order.sort_key)

    transactions, _ = read_all(mysql_database, start, tables=[table_name(mysql_database, "members")])
    binlog_columns = [c for t in transactions for c in t.changes][0].shape.columns
    assert select_columns[0].members == members
    assert select_columns[2].members == ("It's", "Blue", "a'b", "back\\slash")
    assert binlog_columns == select_columns
    assert key_columns[0].members == members
    assert ordered_in_python == keys_in_mysql_order
    snapshot = sorted(_snapshot_window_rows_keyed(mysql_database, ref), key=lambda row: row["id"])
    assert snapshot == sorted(_binlog_rows(mysql_database, start, "members"), key=lambda row: row["id"])


def _snapshot_window_rows_keyed(endpoint: MySqlEndpoint, ref: TableRef) -> list[dict[str, Any]]:
    with endpoint.connect() as connection, connection.cursor() as cursor:
        columns = read_table_column_types(cursor, ref.schema, ref.table)
        key_columns = read_key_columns(cursor, ref, ("e", "id"))
    window = read_window(endpoint, ref, columns, ("e", "id"), key_columns, Chunk(0, None, None))
    return window.rows.to_pylist()
