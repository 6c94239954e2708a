"""SELECT results straight to canonical Arrow columns, parsed column by column instead of cell by cell.

Invariant: for rows of table columns fetched on a connection opened with ``TEXT_RESULT_CONVERSIONS``
(session ``time_zone='+00:00'``), ``text_rows_to_arrow(columns, rows)`` equals
``to_arrow_table(columns, [normalise_select_row(columns, row) for row in rows])`` for the same rows
fetched with PyMySQL's default converters: the row mapping of :mod:`.types`, which the binlog
path matches (``test_every_type_maps_to_identical_arrow_values_from_select_and_binlog`` checks
both paths for every type; ``test_columnar_select_nulls_the_dates_python_cannot_hold_like_the_row_path``
the dates only the row path used to handle; ``tests/unit/test_select_arrow.py`` many more values).

Why: PyMySQL converts every cell in Python (a regex per DATETIME, a ``Decimal`` per DECIMAL, an
``int`` per integer), and the row mapping then visits every cell again. Without decoders PyMySQL
hands over the text MySQL sent (``str``; ``bytes`` for binary columns), fetching 1.7x faster than
with them (236,000 vs 135,000 rows/s, 10 mixed columns), and Arrow's casts parse a whole column in C:

- integers, YEAR, DECIMAL and BIGINT UNSIGNED (as ``decimal128(20, 0)``): cast from the text;
- DOUBLE: cast to float64; FLOAT: to float64 then float32, as the row path does. Both arrive as
  ``CAST(x AS DOUBLE)`` (:func:`.normalise.select_list`), whose text is the shortest that reads
  back as the stored double, and a stored FLOAT is a float32 value, so both casts are exact (the
  plain text of a FLOAT has 6 significant digits, which no parsing can undo);
- DATE, DATETIME, TIMESTAMP: cast from the text (MySQL always prints ``YYYY-MM-DD[ hh:mm:ss[.f]]``);
  Arrow refuses the zero and invalid dates PyMySQL leaves as text (which the row path makes null),
  but accepts year 0, which Python's ``date`` cannot hold. A column with either is converted
  value by value, with PyMySQL's own converter, so those rare columns give exactly the row path;
- text, ENUM, SET and binary strings: already the canonical value;
- JSON: re-printed canonically value by value, parsed by the C scanner ``json.loads`` itself
  uses, called directly (``loads`` wraps it in whitespace regexes: 1.25 vs 0.39 µs per document);
- TIME, BIT and spatial values: value by value, PyMySQL's converter then the row path's normaliser
  (rare types).

The connection stays usable for other statements (watermarks, weight strings): their results are
strings and binary strings, which have no decoder anyway.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Sequence

# The C scanner is a CPython internal that typeshed does not list; json itself uses it.
from json.scanner import c_make_scanner  # type: ignore[attr-defined]
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pymysql import converters

from airflow_mysql_cdc.engine.mysql.normalise import canonical_json, select_normaliser
from airflow_mysql_cdc.engine.mysql.types import ColumnType, to_arrow_array

TEXT_RESULT_CONVERSIONS: dict[Any, Any] = {
    key: value for key, value in converters.conversions.items() if not isinstance(key, int)
}
"""``conv=`` for ``pymysql.connect``: PyMySQL's parameter encoders, and no result decoders."""

_PYMYSQL_DECODERS: dict[str, Callable[[Any], Any]] = {
    "date": converters.convert_date,
    "datetime": converters.convert_datetime,
    "timestamp": converters.convert_datetime,
    "time": converters.convert_timedelta,
}
"""What PyMySQL's default decoders do to the text of a kind the value-by-value path handles."""

_CAST_FROM_TEXT = frozenset(("int", "uint", "year", "decimal", "double"))
_ALREADY_CANONICAL = {"text": pa.string(), "enum": pa.string(), "set": pa.string(), "binary": pa.binary()}
_TEMPORAL_PARSE_TYPES = {"date": pa.date32(), "datetime": pa.timestamp("us"), "timestamp": pa.timestamp("us")}
_FIRST_PYTHON_DAY = (datetime.date(1, 1, 1) - datetime.date(1970, 1, 1)).days
_FIRST_PYTHON_MICROSECOND = _FIRST_PYTHON_DAY * 86_400_000_000
_SCAN_JSON = c_make_scanner(json.JSONDecoder())


def text_rows_to_arrow(columns: Sequence[ColumnType], rows: Sequence[Sequence[Any]]) -> pa.Table:
    """Rows fetched without decoders (values in ``columns`` order) as a table of canonical columns."""
    cells_by_column: list[Sequence[Any]] = list(zip(*rows, strict=True)) if rows else [()] * len(columns)
    return pa.table(
        {
            column.name: text_column_to_arrow(column, cells)
            for column, cells in zip(columns, cells_by_column, strict=True)
        }
    )


def text_column_to_arrow(column: ColumnType, cells: Sequence[Any]) -> pa.Array:
    """One column's undecoded cells as an Arrow array of :meth:`ColumnType.arrow_type`."""
    kind = column.kind
    if kind in _ALREADY_CANONICAL:
        return pa.array(cells, _ALREADY_CANONICAL[kind])
    if kind in _CAST_FROM_TEXT:
        return pa.array(cells, pa.string()).cast(column.arrow_type())
    if kind == "float":
        return pa.array(cells, pa.string()).cast(pa.float64()).cast(pa.float32())
    if kind in _TEMPORAL_PARSE_TYPES:
        parsed = _parse_temporal(column, cells)
        if parsed is not None:
            return parsed
    if kind == "json":
        return pa.array(
            [None if cell is None else canonical_json(_parse_json(cell)) for cell in cells], pa.string()
        )
    return _value_by_value(column, cells)


def _parse_json(text: str) -> Any:
    """``json.loads(text)``: the same scanner, without the wrapper (MySQL prints no outer whitespace)."""
    try:
        value, end = _SCAN_JSON(text, 0)
    except StopIteration:  # leading whitespace, or not JSON: let loads decide
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def _parse_temporal(column: ColumnType, cells: Sequence[Any]) -> pa.Array | None:
    """The column parsed by Arrow, or None when a value needs PyMySQL's own judgement."""
    parse_type = _TEMPORAL_PARSE_TYPES[column.kind]
    try:
        parsed = pa.array(cells, pa.string()).cast(parse_type)
    except pa.ArrowInvalid:
        return None  # a zero or invalid date: PyMySQL keeps its text, the row path makes it null
    if column.kind == "date":
        earliest, first_valid = pc.min(parsed.cast(pa.int32())).as_py(), _FIRST_PYTHON_DAY
    else:
        earliest, first_valid = pc.min(parsed.cast(pa.int64())).as_py(), _FIRST_PYTHON_MICROSECOND
    if earliest is not None and earliest < first_valid:
        return None  # year 0: valid for MySQL and Arrow, not for Python's date (the row path: null)
    return parsed.cast(column.arrow_type())


def _value_by_value(column: ColumnType, cells: Sequence[Any]) -> pa.Array:
    """Exactly the row path: PyMySQL's default decoder, then :func:`.select_normaliser`."""
    decode = _PYMYSQL_DECODERS.get(column.kind)
    normalise = select_normaliser(column)
    values = []
    for cell in cells:
        value = cell if cell is None or decode is None else decode(cell)
        values.append(value if value is None or normalise is None else normalise(value))
    return to_arrow_array(column, values)
