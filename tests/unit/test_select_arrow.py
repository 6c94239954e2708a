"""The columnar SELECT path gives the row path's Arrow values, for any text MySQL could send.

The integration test ``test_every_type_maps_to_identical_arrow_values_from_select_and_binlog``
checks every MySQL type against a real server; these check the parsers on many more values.
"""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from pymysql import converters

from airflow_mysql_cdc.engine.mysql_types import ColumnType, select_normaliser, to_arrow_array
from airflow_mysql_cdc.engine.select_arrow import text_column_to_arrow, text_rows_to_arrow

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


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(-(2.0**127), 2.0**127, width=32), max_size=20),
    st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=20),
)
def test_float_text_is_rounded_twice_like_the_row_path(floats, doubles):
    """MySQL prints a FLOAT with up to 6 significant digits (or in full); it becomes a double first."""
    float_cells = [f"{value:.6g}" for value in floats] + [repr(value) for value in floats]
    assert_same_as_row_path(ColumnType("f", "float"), float_cells)
    assert_same_as_row_path(ColumnType("d", "double"), [repr(value) for value in doubles])


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
