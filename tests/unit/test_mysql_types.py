"""The type mapping: Arrow types per MySQL type, and the value fixes for each source's quirks."""

from __future__ import annotations

import datetime
import decimal
import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_mysql_cdc.engine.binlog.changes import TableShape
from airflow_mysql_cdc.engine.lake.delta_layout import to_delta_array
from airflow_mysql_cdc.engine.mysql.normalise import (
    binlog_normaliser,
    canonical_json,
    select_list,
    select_normaliser,
)
from airflow_mysql_cdc.engine.mysql.schema import Column, parse_members
from airflow_mysql_cdc.engine.mysql.types import ColumnType, UnsupportedColumnTypeError, to_arrow_array


def schema_row(name: str, data_type: str, column_type: str | None = None, **extra: int) -> Column:
    """A column as :func:`read_columns` builds it from ``information_schema``."""
    return Column(name, data_type, column_type or data_type, True, **extra)


@pytest.mark.parametrize(
    ("row", "arrow_type"),
    [
        (schema_row("a", "tinyint", "tinyint unsigned"), pa.uint8()),
        (schema_row("a", "mediumint"), pa.int32()),
        (schema_row("a", "bigint", "bigint unsigned"), pa.decimal128(20, 0)),
        (schema_row("a", "decimal", numeric_precision=12, numeric_scale=3), pa.decimal128(12, 3)),
        (schema_row("a", "datetime", datetime_precision=3), pa.timestamp("us")),
        (schema_row("a", "timestamp", datetime_precision=0), pa.timestamp("us", tz="UTC")),
        (schema_row("a", "time", datetime_precision=0), pa.duration("us")),
        (schema_row("a", "year"), pa.int16()),
        (schema_row("a", "longtext"), pa.string()),
        (schema_row("a", "binary", octet_length=4), pa.binary()),
        (schema_row("a", "json"), pa.string()),
        (schema_row("a", "bit", numeric_precision=7), pa.uint64()),
        (schema_row("a", "multipolygon"), pa.binary()),
    ],
)
def test_information_schema_types_map_to_arrow(row, arrow_type):
    assert ColumnType.from_column(row).arrow_type() == arrow_type


def test_enum_and_set_members_keep_definition_order_and_quotes():
    column = ColumnType.from_column(schema_row("e", "enum", "enum('b','a''s','c,d')"))
    assert column.members == ("b", "a's", "c,d")


@pytest.mark.parametrize(
    ("column_type", "members"),
    [
        ("enum('x'',''y','z')", ("x','y", "z")),
        ("enum('Red','GREEN')", ("Red", "GREEN")),
        ("set('It''s','a,b','''')", ("It's", "a,b", "'")),
        (r"enum('a\\b','tab\there')", ("a\\b", "tab\there")),
        ("enum('')", ("",)),
    ],
)
def test_the_one_member_parser_reads_quotes_commas_escapes_and_case(column_type: str, members: tuple) -> None:
    assert parse_members(column_type) == members
    assert Column("c", column_type.split("(")[0], column_type, False).members == members


def test_unknown_types_are_refused_by_name():
    with pytest.raises(UnsupportedColumnTypeError, match="'v'.*vector"):
        ColumnType.from_column(schema_row("v", "vector", "vector(3)"))


def test_binlog_quirks_are_fixed():
    assert binlog_normaliser(ColumnType("y", "year"))(1900) == 0
    assert binlog_normaliser(ColumnType("b", "bit", bits=10))("1010101010") == 682
    assert binlog_normaliser(ColumnType("b", "binary", fixed_length=4))(b"ab") == b"ab\x00\x00"
    assert binlog_normaliser(ColumnType("b", "binary"))("") == b""
    assert binlog_normaliser(ColumnType("s", "set", members=("x", "y", "z")))({"z", "x"}) == "x,z"
    assert binlog_normaliser(ColumnType("j", "json"))({b"b": [b"x"], b"a": 1}) == '{"a":1,"b":["x"]}'
    assert binlog_normaliser(ColumnType("g", "geometry"))(b"\xe6\x10\x00\x00WKB") == b"WKB"
    epoch = binlog_normaliser(ColumnType("t", "timestamp"))(datetime.datetime(1970, 1, 1))
    assert epoch is None  # the zero TIMESTAMP
    time_fix = binlog_normaliser(ColumnType("t", "time", fsp=2))
    assert time_fix(-datetime.timedelta(seconds=0.99)) == -datetime.timedelta(seconds=0.01)
    assert time_fix(-datetime.timedelta(seconds=2)) == -datetime.timedelta(seconds=2)
    assert binlog_normaliser(ColumnType("t", "time")) is None
    assert binlog_normaliser(ColumnType("i", "int", bits=32)) is None


def test_select_quirks_are_fixed():
    assert select_normaliser(ColumnType("d", "date"))("0000-00-00") is None
    assert select_normaliser(ColumnType("b", "bit", bits=10))(b"\x02\xaa") == 682
    assert select_normaliser(ColumnType("f", "float"))(1.1) == pytest.approx(1.1, rel=1e-7)
    assert select_normaliser(ColumnType("f", "float"))(1.1) != 1.1  # rounded to float32
    naive_utc = datetime.datetime(2024, 1, 1, 12)  # the session runs with time_zone '+00:00'
    assert select_normaliser(ColumnType("t", "timestamp"))(naive_utc) == naive_utc
    assert select_normaliser(ColumnType("t", "timestamp"))("0000-00-00 00:00:00") is None
    assert select_normaliser(ColumnType("j", "json"))('{"b": 1, "a": "ü"}') == '{"a":"ü","b":1}'


def test_select_list_reads_float_and_double_through_a_cast_under_their_own_names():
    columns = (
        ColumnType("id", "int", bits=32),
        ColumnType("f", "float"),
        ColumnType("odd`name", "double"),
        ColumnType("price", "decimal", precision=12, scale=2),
    )
    assert select_list(columns) == (
        "`id`, CAST(`f` AS DOUBLE) AS `f`, CAST(`odd``name` AS DOUBLE) AS `odd``name`, `price`"
    )


def test_canonical_json_is_one_text_per_document():
    assert canonical_json({"b": 1, "a": [None, True]}) == canonical_json({"a": [None, True], "b": 1})


def test_naive_timestamps_mean_utc_in_arrow():
    array = to_arrow_array(ColumnType("t", "timestamp"), [datetime.datetime(2024, 1, 1, 12)])
    assert array.type == pa.timestamp("us", tz="UTC")
    assert array.to_pylist()[0] == datetime.datetime(2024, 1, 1, 12, tzinfo=datetime.UTC)


def test_unsigned_bigint_becomes_an_exact_decimal():
    array = to_arrow_array(ColumnType("u", "uint", bits=64), [2**64 - 1, None])
    assert array.type == pa.decimal128(20, 0) and array.to_pylist()[0] == 2**64 - 1


def test_decimals_wider_than_38_digits_are_exact_and_stored_as_text():
    value = decimal.Decimal("-12345678901234567890123456789012345.123456789012345678901234567890")
    array = to_arrow_array(ColumnType("d", "decimal", precision=65, scale=30), [value, None])
    assert array.type == pa.decimal256(65, 30) and array.to_pylist() == [value, None]
    stored = to_delta_array(array)
    assert stored.type == pa.string() and stored.to_pylist() == [str(value), None]


def test_column_types_and_table_shapes_round_trip_through_json():
    columns = (
        ColumnType("id", "uint", bits=64),
        ColumnType("price", "decimal", precision=12, scale=2),
        ColumnType("state", "enum", members=("new", "it's done")),
        ColumnType("at", "timestamp", fsp=6),
    )
    shape = TableShape("shop", "orders", columns, ("id",))
    assert TableShape.from_json(json.loads(json.dumps(shape.to_json()))) == shape


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "a", "kind": "money"}, "unknown kind"),
        ({"name": "a", "kind": "int", "bits": -1}, "bits must be a non-negative int"),
        ({"name": "a", "kind": "set", "members": "x,y"}, "members must be a list"),
        ({"kind": "int"}, "needs a string 'name'"),
    ],
)
def test_malformed_column_json_is_refused_by_name(data, message):
    with pytest.raises(ValueError, match=message):
        ColumnType.from_json(data)


def test_a_shape_whose_key_names_no_column_is_refused():
    data = {"schema": "s", "table": "t", "columns": [{"name": "a", "kind": "int"}], "primary_key": ["b"]}
    with pytest.raises(ValueError, match="key columns"):
        TableShape.from_json(data)


json_documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_documents)
def test_canonical_json_matches_json_dumps(document):
    expected = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(document) == expected
