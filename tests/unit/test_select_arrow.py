"""The columnar SELECT path gives the row path's Arrow values, for any text MySQL could send.

The integration test ``test_every_type_maps_to_identical_arrow_values_from_select_and_binlog``
checks every MySQL type against a real server; these check the parsers on many more values.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import struct
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from pymysql import converters

from airflow_mysql_cdc.engine.mysql.normalise import select_normaliser
from airflow_mysql_cdc.engine.mysql.select_arrow import text_column_to_arrow, text_rows_to_arrow
from airflow_mysql_cdc.engine.mysql.types import ColumnType, to_arrow_array

PYMYSQL_DECODER_BY_KIND = {
    "int": int,
    "uint": int,
    "year": int,
    "decimal": decimal.Decimal,
    "float": float,
    "double": float,
    "date": converters.convert_date,
    "datetime": converters.convert_datetime,
    "timestamp": converters.convert_datetime,
    "time": converters.convert_timedelta,
}


def row_path(column: ColumnType, cells: list[Any]) -> pa.Array:
    """What PyMySQL's default decoders and the row mapping make of the same cells."""
    decode = PYMYSQL_DECODER_BY_KIND.get(column.kind)
    normalise = select_normaliser(column)
    values = []
    for cell in cells:
        value = cell if cell is None or decode is None else decode(cell)
        values.append(value if value is None or normalise is None else normalise(value))
    return to_arrow_array(column, values)


def assert_same_as_row_path(column: ColumnType, cells: list[Any]) -> None:
    assert text_column_to_arrow(column, cells).equals(row_path(column, cells))


json_documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_documents, st.sampled_from([(", ", ": "), (",", ":")]), st.sampled_from(["", " ", "\n "]))
def test_json_text_is_reprinted_exactly_as_the_row_path_does(document, separators, padding):
    text = padding + json.dumps(document, separators=separators, ensure_ascii=False) + padding
    assert_same_as_row_path(ColumnType("j", "json"), [text, None])


def mysql_double_texts(value: float) -> list[str]:
    """Ways MySQL prints a DOUBLE expression: the shortest round-trip digits, as ``1.5e-7``
    (no ``+`` in the exponent), in full positional notation, ``-0`` for negative zero."""
    shortest = repr(value).replace("e+", "e")
    if shortest.endswith(".0"):
        shortest = shortest[:-2]
    return [shortest, f"{decimal.Decimal(repr(value)):f}"]


FLOAT_FORMATS = {"float": ("<f", "<I", 32), "double": ("<d", "<Q", 64)}
"""struct formats of a FLOAT and a DOUBLE value and of its bit pattern, and its width."""


def finite(kind: str) -> st.SearchStrategy[float]:
    """Every finite value of a kind by its bit pattern: subnormals, extremes and -0.0 included."""
    value_format, bits_format, width = FLOAT_FORMATS[kind]

    def from_bits(bits: int) -> float:
        return struct.unpack(value_format, struct.pack(bits_format, bits))[0]

    return st.integers(0, 2**width - 1).map(from_bits).filter(math.isfinite)


def bit_patterns(kind: str, values: list[float | None]) -> list[bytes | None]:
    return [None if value is None else struct.pack(FLOAT_FORMATS[kind][0], value) for value in values]


@settings(max_examples=300, deadline=None)
@given(st.lists(finite("float"), max_size=20), st.lists(finite("double"), max_size=20))
def test_float_and_double_cast_text_parses_to_the_stored_bits(floats, doubles):
    """The select list reads FLOAT and DOUBLE as ``CAST(x AS DOUBLE)``, whose text is exact; the
    columnar path gives back the very bit patterns (and agrees with the row path)."""
    for column, values in ((ColumnType("f", "float"), floats), (ColumnType("d", "double"), doubles)):
        for form in (0, 1):
            cells = [mysql_double_texts(value)[form] for value in values] + [None]
            parsed = text_column_to_arrow(column, cells).to_pylist()
            assert bit_patterns(column.kind, parsed) == bit_patterns(column.kind, [*values, None])
            assert_same_as_row_path(column, cells)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), max_size=20), st.lists(st.integers(-(2**63), 2**63 - 1), max_size=20)
)
def test_integer_text_keeps_every_value_of_64_bits(unsigned, signed):
    assert_same_as_row_path(ColumnType("u", "uint", bits=64), [str(value) for value in unsigned])
    assert_same_as_row_path(ColumnType("i", "int", bits=64), [str(value) for value in signed])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.decimals(min_value=-(10**9), max_value=10**9, places=4, allow_nan=False), max_size=20))
def test_decimal_text_keeps_its_scale(values):
    assert_same_as_row_path(
        ColumnType("d", "decimal", precision=14, scale=4), [f"{value:.4f}" for value in values]
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.datetimes(min_value=datetime.datetime(1, 1, 1)), max_size=20),
    st.sampled_from([0, 1, 3, 6]),
)
def test_datetime_text_of_every_precision_parses_like_pymysql(values, fsp):
    def mysql_text(value: datetime.datetime) -> str:
        text = value.strftime("%Y-%m-%d %H:%M:%S").rjust(19, "0")
        return text + (f".{value.microsecond:06d}"[: fsp + 1] if fsp else "")

    cells = [mysql_text(value) for value in values]
    for kind in ("datetime", "timestamp"):
        assert_same_as_row_path(ColumnType("t", kind, fsp=fsp), cells)
    assert_same_as_row_path(ColumnType("d", "date"), [cell[:10] for cell in cells])


def test_dates_python_cannot_hold_become_null_like_the_row_path():
    for kind in ("date", "datetime", "timestamp"):
        suffix = "" if kind == "date" else " 00:00:00"
        for bad in ("0000-00-00", "0000-01-01", "2024-00-10", "2024-02-30", "2024-01-00"):
            cells = ["2024-02-29" + suffix, bad + suffix, None]
            assert_same_as_row_path(ColumnType("t", kind), cells)
            assert text_column_to_arrow(ColumnType("t", kind), cells).null_count == 2


def test_rare_types_go_value_by_value_through_the_row_path():
    assert_same_as_row_path(
        ColumnType("t", "time", fsp=2), ["-838:59:59.00", "00:00:00.01", "-00:00:00.50", None]
    )
    assert_same_as_row_path(ColumnType("b", "bit", bits=10), [b"\x02\xaa", b"\x00\x00", None])
    assert_same_as_row_path(ColumnType("g", "geometry"), [b"\xe6\x10\x00\x00\x01\x01", None])


def test_an_empty_result_gives_empty_columns_of_the_canonical_types():
    columns = (ColumnType("id", "int", bits=32), ColumnType("at", "timestamp"), ColumnType("j", "json"))
    table = text_rows_to_arrow(columns, [])
    assert table.num_rows == 0
    assert table.schema.types == [pa.int32(), pa.timestamp("us", tz="UTC"), pa.string()]
