"""Values of MySQL columns made canonical: the same Python value from a SELECT and from the binlog.

Invariant: a row read by ``SELECT`` (PyMySQL, session ``time_zone='+00:00'``) and the same row read
from its binlog image normalise to the *same Python value* per column, and therefore to the same
Arrow value. Everything downstream (merge keys, dedup, Delta writes) can compare a snapshot row
with a change row without knowing where either came from. Guarded by
``test_every_type_maps_to_identical_arrow_values_from_select_and_binlog`` in
tests/integration/test_mysql_types_parity.py.

The two sources disagree in these places, each fixed here (found by that parity test):

==============  ===========================  ===========================  =========================
MySQL type      mysql-replication gives      PyMySQL SELECT gives         canonical value / Arrow
==============  ===========================  ===========================  =========================
BIGINT UNSIGNED int                          int                          int / decimal128(20, 0)
FLOAT           float of the 4-byte value    text of 6 digits (see below) float32 value / float32
DOUBLE(M,D)     float of the 8-byte value    text of D decimals (below)   float / float64
TIMESTAMP(fsp)  naive UTC datetime           naive, session tz (UTC)      naive UTC / timestamp[us, UTC]
zero dates      None (DATETIME, DATE),       the string '0000-00-00...'  None (null) -- documented
                1970-01-01 (TIMESTAMP)
YEAR            0000 arrives as 1900         0                            int / int16
BINARY(n)       trailing 0x00 stripped       padded to n bytes            padded bytes / binary
binary, empty   '' (str)                     b''                          b'' / binary
JSON            dict with bytes keys         text                         sorted compact text / string
SET             python set; empty -> None    'a,b' in definition order    'a,b' definition order
BIT(n)          '0101' text                  big-endian bytes             int / uint64
TIME(fsp) < 0   -(s + (1 - fraction))        exact timedelta              timedelta / duration[us]
GEOMETRY        4-byte SRID + WKB            4-byte SRID + WKB            WKB (SRID dropped) / binary
==============  ===========================  ===========================  =========================

FLOAT and DOUBLE columns are therefore read as ``CAST(x AS DOUBLE)`` by every SELECT of table rows,
whose select list :func:`select_list` builds (the one rule). MySQL prints a FLOAT with 6 significant
digits (568054.875 arrives as ``568055``) and a DOUBLE(M,D) with D decimals, neither always the
stored value, so a snapshot wrote another value than the binlog path for the same row. A DOUBLE
expression prints as the shortest text that reads back as the same double, and every float32 is a
double, so the cast's text is exact, -0.0 included: the snapshot, the comparison side and the
binlog agree bit for bit on random bit patterns, subnormals and the extremes
(``test_snapshot_comparison_and_binlog_read_floats_doubles_decimals_bit_for_bit``). A plain
DOUBLE's text and a DECIMAL's are exact by themselves
(``test_mysql_text_rounds_float_and_scaled_double_but_not_double_or_decimal``).
``CAST(... AS DOUBLE)`` needs MySQL 8.0.17 or later.

TIMESTAMP values stay *naive* datetimes meaning UTC (the Arrow type carries the zone): attaching
``tzinfo`` to every value cost about 0.5 µs per value on the hot path, 1% of the reader's budget.

Zero and invalid dates (``'0000-00-00'``, ``'2024-00-10'``, allowed only without NO_ZERO_DATE)
become null on both paths: Arrow and Delta cannot represent them. Text columns decode with the
column's character set (latin1 is cp1252, as in MySQL); binary-collated columns stay bytes.
"""

from __future__ import annotations

import datetime
import decimal
import json
import struct
from collections.abc import Callable, Sequence

# The C accelerators are CPython internals that typeshed does not list; json itself uses them.
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

from airflow_mysql_cdc.engine.mysql.schema import quote_identifier
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.values.json_values import RowValues

SNAPSHOT_SESSION_STATEMENTS = ("SET time_zone = '+00:00'",)
"""Run these on a snapshot (SELECT) connection so TIMESTAMP values arrive in UTC."""

_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_FLOAT32 = struct.Struct("<f")
_ZERO_DURATION = datetime.timedelta(0)

Normaliser = Callable[[Any], Any]


def _float32(value: float) -> float:
    return _FLOAT32.unpack(_FLOAT32.pack(value))[0]


def _json_plain(value: Any) -> Any:
    """mysql-replication's binary JSON decoder yields bytes for keys and strings."""
    kind = type(value)  # exact types: this runs for every JSON value of every row
    if kind is bytes:
        return value.decode("utf-8")
    if kind is dict:
        return {
            (key.decode("utf-8") if type(key) is bytes else key): _json_plain(item)
            for key, item in value.items()
        }
    if kind is list:
        return [_json_plain(item) for item in value]
    if kind is decimal.Decimal:
        # A DECIMAL stored in a JSON document (JSON_OBJECT('p', price)) comes back as Decimal; the
        # SELECT side parses the printed document with json.loads, which makes it a float, so the
        # same float here gives the same text (test_every_type_maps_to_identical_arrow_values_...).
        return float(value)
    if kind is datetime.datetime:
        # A date or time inside a document (the compiled decoder's binary_json prints them exactly;
        # this library fallback cannot tell a DATE from a DATETIME nor read TIME over 23 hours).
        return f"{value:%Y-%m-%d %H:%M:%S}.{value.microsecond:06d}"
    if kind is datetime.time:
        return f"{value:%H:%M:%S}.{value.microsecond:06d}"
    return value


def _canonical_json_encoder() -> Callable[[Any], str]:
    """``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)``, minus its overhead.

    ``JSONEncoder.encode`` builds a new C encoder on every call, which is half the cost for small
    documents (1.46 vs 0.74 µs measured); the C encoder built once gives the same text (checked by
    ``test_canonical_json_matches_json_dumps`` for arbitrary documents).
    """
    reference = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if c_make_encoder is None:  # pragma: no cover - CPython always has the C accelerator
        return reference.encode
    encode = c_make_encoder(None, reference.default, encode_basestring, None, ":", ",", True, False, True)
    return lambda value: "".join(encode(value, 0))


_CANONICAL_JSON = _canonical_json_encoder()


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: one text per JSON document whatever printed it."""
    return _CANONICAL_JSON(value)


def _binlog_json(value: Any) -> str:
    return _CANONICAL_JSON(_json_plain(value))


def _binlog_timestamp(value: datetime.datetime) -> datetime.datetime | None:
    return None if value == _EPOCH_NAIVE else value  # the zero TIMESTAMP is stored as 0


def _binlog_negative_fractional_time(value: datetime.timedelta) -> datetime.timedelta:
    # The library reads a negative TIME(fsp) as -(whole seconds + (1 - fraction)): it complements the
    # integer part but not the fractional one. Measured for fsp 1-6 by the parity test.
    if value >= _ZERO_DURATION:
        return value
    magnitude = -value
    fraction_us = magnitude.microseconds
    if not fraction_us:
        return value
    return -(magnitude + datetime.timedelta(microseconds=1_000_000 - 2 * fraction_us))


def _binlog_binary(length: int) -> Normaliser:
    # Empty binary values arrive as "": Python decodes b"" without looking up the (unknown) codec
    # "binary", the LookupError that keeps every other binary value bytes never happens.
    if length:
        return lambda value: (value or b"").ljust(length, b"\x00")
    return lambda value: value or b""


def binlog_normaliser(column: ColumnType) -> Normaliser | None:
    """The function turning a non-null mysql-replication value into the canonical one, or None."""
    kind = column.kind
    if kind == "float":
        return _float32
    if kind == "timestamp":
        return _binlog_timestamp
    if kind == "year":
        return lambda value: 0 if value == 1900 else value
    if kind == "time" and column.fsp:
        return _binlog_negative_fractional_time
    if kind == "binary":
        return _binlog_binary(column.fixed_length)
    if kind == "json":
        return _binlog_json
    if kind == "set":
        members = column.members
        return lambda value: ",".join(member for member in members if member in value)
    if kind == "bit":
        return lambda value: int(value, 2)
    if kind == "geometry":
        return lambda value: value[4:]
    return None


def _select_temporal(value: Any) -> Any:
    return None if isinstance(value, str) else value  # PyMySQL returns zero dates as text


def select_normaliser(column: ColumnType) -> Normaliser | None:
    """The function turning a non-null PyMySQL SELECT value into the canonical one, or None."""
    kind = column.kind
    if kind == "float":
        return _float32
    if kind in ("date", "datetime", "timestamp"):
        return _select_temporal
    if kind == "json":
        return lambda value: canonical_json(json.loads(value))
    if kind == "bit":
        return lambda value: int.from_bytes(value, "big")
    if kind == "geometry":
        return lambda value: value[4:]
    return None


_READ_AS_DOUBLE = frozenset(("float", "double"))


def select_list(columns: Sequence[ColumnType]) -> str:
    """The select list reading ``columns`` exactly, in order, each under its own name.

    Every SELECT of table rows for the lake or for a comparison uses it: FLOAT and DOUBLE columns
    as ``CAST(x AS DOUBLE)`` (see the module docstring for why that text is exact), the others as
    they are. Both conversion paths then hold: PyMySQL decodes the cast as a double, which
    :func:`select_normaliser` leaves as it is, and :mod:`.select_arrow` parses it as a float64.
    """
    expressions = []
    for column in columns:
        name = quote_identifier(column.name)
        expressions.append(f"CAST({name} AS DOUBLE) AS {name}" if column.kind in _READ_AS_DOUBLE else name)
    return ", ".join(expressions)


def normalise_select_row(columns: Sequence[ColumnType], row: Sequence[Any]) -> RowValues:
    """A SELECT row (in column order) as a dict of canonical values."""
    normalisers = [select_normaliser(column) for column in columns]
    result: RowValues = {}
    for column, normaliser, value in zip(columns, normalisers, row, strict=True):
        result[column.name] = value if value is None or normaliser is None else normaliser(value)
    return result
