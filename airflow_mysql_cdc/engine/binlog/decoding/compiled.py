"""A row-image decoder compiled per table schema: the library's per-column dispatch, without the dispatch.

Invariant: for every row image of a table it accepts, the compiled reader returns exactly the values
``mysql-replication`` decodes and :mod:`~airflow_mysql_cdc.engine.mysql.normalise` then normalises
(same Python types, same ``Decimal`` exponents, same zero-date nulls), except that a JSON document
holding only the literal ``null`` is the text ``"null"`` rather than SQL NULL (see :mod:`.binary_json`).
Guarded by ``test_the_compiled_decoder_gives_the_library_values_for_every_type`` (every MySQL type, extremes,
zero values, NULLs) and the SELECT/binlog parity test, which reads through this decoder.

Why: the library decodes every value through ``__read_values_name``, a chain of ``if column.type
== ...`` tests, per-value ``struct.unpack`` of a fresh ``packet.read`` slice, two bitmap lookups and
a column-name lookup through the table map; that dispatch was about 30% of the bare loop and its
binary JSON parser another 30% (docs/benchmarks.md, "Faster decoding"). Here the dispatch happens
once per table map: the column types become the straight-line source of one Python function (one
``if`` per nullable column, ``unpack_from`` on the packet's buffer at a running offset), built with
``exec`` and cached with the table's decoding. The library still parses the stream, the table maps
and each rows event's header; only the row images are read here.

What is left to the library (the caller falls back to ``event.rows``): partial JSON updates, tables
with a column type this module does not compile (the pre-5.6.4 temporal and DECIMAL formats, a text
column in a character set Python has no codec for, ENUM/SET without member metadata), and any event
whose images do not end exactly at the event's end (a decoding disagreement is never silent: that
event is decoded again by the library and the disagreement logged).
"""

from __future__ import annotations

import codecs
import datetime
from collections.abc import Callable, Sequence
from struct import Struct
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.row_event import RowsEvent

from airflow_mysql_cdc.engine.binlog.decoding.json_text import json_text
from airflow_mysql_cdc.engine.binlog.decoding.native import ROW_VALUES
from airflow_mysql_cdc.engine.binlog.decoding.packed_decimal import decimal_size, packed_decimal_reader
from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.mysql.normalise import binlog_normaliser
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.values.json_values import RowValues

ImageReader = Callable[[bytes, int], tuple[RowValues, tuple[Any, ...], int]]
"""``(buffer, offset) -> (values by column name, primary key, offset after the image)``."""

_EPOCH = datetime.datetime(1970, 1, 1)
_INTEGER_FORMATS = {
    ("int", 8): "<b",
    ("uint", 8): "<B",
    ("int", 16): "<h",
    ("uint", 16): "<H",
    ("int", 32): "<i",
    ("uint", 32): "<I",
    ("int", 64): "<q",
    ("uint", 64): "<Q",
}
_LENGTH_FORMATS = {2: "<H", 4: "<I"}


class UncompilableColumn(CdcError):
    """This column's type is left to the library (the reason is the message)."""


# --- helpers for the values that need more than a few lines --------------------------------------


def _fsp_reader(fsp: int) -> tuple[int, Callable[[bytes, int], int]]:
    """Bytes and reader of the fractional seconds, as the library computes them (in microseconds)."""
    size = (fsp + 1) // 2
    if not size:
        return 0, lambda data, at: 0
    scale = 10 ** (6 - fsp)

    def microseconds(data: bytes, at: int) -> int:
        value = int.from_bytes(data[at : at + size], "big", signed=True)
        if fsp % 2:
            value = int(value / 10)
        return value * scale

    return size, microseconds


def _datetime2(fsp: int) -> Callable[[bytes, int], datetime.datetime | None]:
    _, fraction = _fsp_reader(fsp)
    make_datetime = datetime.datetime

    def read(data: bytes, at: int) -> datetime.datetime | None:
        packed = int.from_bytes(data[at : at + 5], "big")
        year_month = (packed >> 22) & 0x1FFFF
        microsecond = fraction(data, at + 5)
        try:
            return make_datetime(
                year_month // 13,
                year_month % 13,
                (packed >> 17) & 0x1F,
                (packed >> 12) & 0x1F,
                (packed >> 6) & 0x3F,
                packed & 0x3F,
                max(microsecond, 0),  # the library ignores a negative fraction
            )
        except ValueError:  # zero and invalid dates (sql_mode without NO_ZERO_DATE) are null
            return None

    return read


def _timestamp2(fsp: int) -> Callable[[bytes, int], datetime.datetime | None]:
    _, fraction = _fsp_reader(fsp)
    utc = datetime.datetime.utcfromtimestamp

    def read(data: bytes, at: int) -> datetime.datetime | None:
        value = utc(int.from_bytes(data[at : at + 4], "big", signed=True))
        microsecond = fraction(data, at + 4)
        if microsecond > 0:
            return value.replace(microsecond=microsecond)
        return None if value == _EPOCH else value  # the zero TIMESTAMP is stored as 0

    return read


def _time2(fsp: int) -> Callable[[bytes, int], datetime.timedelta]:
    """The library's reading of TIME(fsp), then the correction of negative fractions in mysql_types."""
    _, fraction = _fsp_reader(fsp)
    correct = binlog_normaliser(ColumnType("t", "time", fsp=fsp)) or (lambda value: value)

    def read(data: bytes, at: int) -> datetime.timedelta:
        packed = int.from_bytes(data[at : at + 3], "big", signed=True)
        sign = 1 if (packed >> 23) & 1 else -1
        if sign == -1:
            packed = ~packed + 1
        value = (
            datetime.timedelta(
                hours=(packed >> 12) & 0x3FF,
                minutes=(packed >> 6) & 0x3F,
                seconds=packed & 0x3F,
                microseconds=fraction(data, at + 3),
            )
            * sign
        )
        return correct(value)

    return read


def _date(packed: int) -> datetime.date | None:
    if packed == 0:
        return None
    year, month, day = (packed >> 9) & 0x7FFF, (packed >> 5) & 0xF, packed & 0x1F
    if year == 0 or month == 0 or day == 0:
        return None
    return datetime.date(year, month, day)


def _set_text(members: tuple[str, ...]) -> Callable[[int], str]:
    """A SET bitmask as its members in definition order; the empty set is '' (never NULL)."""
    cache: dict[int, str] = {}

    def text(mask: int) -> str:
        value = cache.get(mask)
        if value is None:
            value = ",".join(member for index, member in enumerate(members) if mask >> index & 1)
            if len(cache) < 4096:
                cache[mask] = value
        return value

    return text


def _json_reader() -> Callable[[bytes], str | None]:
    """Canonical text of a payload, reusing the last result: an update's two images mostly share it.

    ``json_text`` is the compiled printer where the extension is built, else the Python pair
    (``canonical_json(binary_json_value(payload))``); both give the same text (decoding/json_text.py).
    """
    last: list[Any] = [None, None]

    def text(payload: bytes) -> str | None:
        if payload == last[0]:
            return last[1]
        value = json_text(payload)
        last[0] = payload
        last[1] = value
        return value

    return text


# --- code generation -------------------------------------------------------------------------------


class _Source:
    """The body of one image reader, plus the names its code refers to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {}

    def bind(self, prefix: str, index: int, value: Any) -> str:
        name = f"{prefix}_{index}"
        self.names[name] = value
        return name

    def add(self, indent: int, *lines: str) -> None:
        self.lines.extend("    " * indent + line for line in lines)


def _length(source: _Source, index: int, size: int, indent: int) -> None:
    """Emit code reading a little-endian length prefix of ``size`` bytes into ``n``."""
    if size == 1:
        source.add(indent, "n = data[pos]", "pos += 1")
    elif size == 3:
        source.add(indent, "n = int.from_bytes(data[pos:pos + 3], 'little')", "pos += 3")
    elif size in (2, 4):
        unpack = source.bind("L", index, Struct(_LENGTH_FORMATS[size]).unpack_from)
        source.add(indent, f"n = {unpack}(data, pos)[0]", f"pos += {size}")
    else:
        raise UncompilableColumn(f"length prefix of {size} bytes")


def _emit_value(source: _Source, index: int, library_column: Any, column: ColumnType, indent: int) -> None:
    """Emit code reading one non-null value into ``v_<index>`` and moving ``pos`` past it.

    One emitter per family of kinds (:data:`_EMITTERS`); a kind without one is left to the library.
    """
    emit = _EMITTERS.get(column.kind)
    if emit is None:
        raise UncompilableColumn(f"kind {column.kind}")
    emit(source, index, library_column, column, indent)


def _emit_integer(source: _Source, index: int, library_column: Any, column: ColumnType, indent: int) -> None:
    target = f"v_{index}"
    if column.bits == 24:
        signed = column.kind == "int"
        source.add(indent, f"{target} = int.from_bytes(data[pos:pos + 3], 'little', signed={signed})")
        source.add(indent, "pos += 3")
        return
    unpack = source.bind("I", index, Struct(_INTEGER_FORMATS[(column.kind, column.bits)]).unpack_from)
    source.add(indent, f"{target} = {unpack}(data, pos)[0]", f"pos += {column.bits // 8}")


def _emit_float(source: _Source, index: int, library_column: Any, column: ColumnType, indent: int) -> None:
    # A FLOAT read as 4 bytes is already the float32 value mysql_types rounds to.
    fmt, size = ("<f", 4) if column.kind == "float" else ("<d", 8)
    unpack = source.bind("F", index, Struct(fmt).unpack_from)
    source.add(indent, f"v_{index} = {unpack}(data, pos)[0]", f"pos += {size}")


def _emit_decimal(source: _Source, index: int, library_column: Any, column: ColumnType, indent: int) -> None:
    if library_column.type != FIELD_TYPE.NEWDECIMAL:
        raise UncompilableColumn("pre-5.0 DECIMAL")
    size = decimal_size(column.precision, column.scale)
    if ROW_VALUES is not None:  # compiled (:mod:`.native`): the same Decimal
        read = source.bind("D", index, ROW_VALUES.decimal)
        shape = f"{column.precision}, {column.scale}"
        source.add(indent, f"v_{index} = {read}(data, pos, {shape})", f"pos += {size}")
        return
    read = source.bind("D", index, packed_decimal_reader(column.precision, column.scale))
    source.add(indent, f"v_{index} = {read}(data, pos)", f"pos += {size}")


def _emit_date(source: _Source, index: int, library_column: Any, column: ColumnType, indent: int) -> None:
    source.add(indent, f"v_{index} = DATE(data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16)", "pos += 3")


_TEMPORAL_LAYOUTS = {  # the Python reader's maker, the bytes before the fraction, the compiled reader
    ("datetime", FIELD_TYPE.DATETIME2): (_datetime2, 5, "datetime2"),
    ("timestamp", FIELD_TYPE.TIMESTAMP2): (_timestamp2, 4, "timestamp2"),
    ("time", FIELD_TYPE.TIME2): (_time2, 3, None),
}


def _emit_temporal(source: _Source, index: int, library_column: Any, column: ColumnType, indent: int) -> None:
    layout = _TEMPORAL_LAYOUTS.get((column.kind, library_column.type))
    if layout is None:
        raise UncompilableColumn(f"pre-5.6.4 {column.kind.upper()} format")
    make, size, compiled_name = layout
    advance = f"pos += {size + (column.fsp + 1) // 2}"
    if ROW_VALUES is not None and compiled_name is not None:  # compiled (:mod:`.native`): the same datetime
        read = source.bind("T", index, getattr(ROW_VALUES, compiled_name))
        source.add(indent, f"v_{index} = {read}(data, pos, {column.fsp})", advance)
        return
    read = source.bind("T", index, make(column.fsp))
    source.add(indent, f"v_{index} = {read}(data, pos)", advance)


def _emit_year(source: _Source, index: int, library_column: Any, column: ColumnType, indent: int) -> None:
    source.add(indent, f"v_{index} = data[pos] + 1900 if data[pos] else 0", "pos += 1")


def _emit_string(source: _Source, index: int, library_column: Any, column: ColumnType, indent: int) -> None:
    if library_column.type in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING):
        _length(source, index, 2 if library_column.max_length > 255 else 1, indent)
    else:
        _length(source, index, library_column.length_size, indent)
    if column.kind == "binary":
        value = "data[pos:pos + n]"
        if column.fixed_length:  # the library strips BINARY(n)'s trailing zero bytes
            value = f"{value}.ljust({column.fixed_length}, b'\\x00')"
        source.add(indent, f"v_{index} = {value}", "pos += n")
    else:
        encoding = _text_encoding(library_column.character_set_name)
        source.add(indent, f"v_{index} = data[pos:pos + n].decode({encoding!r})", "pos += n")


def _emit_json(source: _Source, index: int, library_column: Any, column: ColumnType, indent: int) -> None:
    _length(source, index, library_column.length_size, indent)
    read = source.bind("J", index, _json_reader())
    # A zero-length payload is what the library reads as None.
    source.add(indent, f"v_{index} = {read}(data[pos:pos + n]) if n else None", "pos += n")


def _emit_members(source: _Source, index: int, library_column: Any, column: ColumnType, indent: int) -> None:
    # ENUM: the member at the stored index ('' at 0); SET: the members of the stored bitmask.
    kind = column.kind
    members = library_column.enum_values if kind == "enum" else library_column.set_values
    if not members:
        raise UncompilableColumn(f"{kind.upper()} without member metadata")
    lookup = tuple(members).__getitem__ if kind == "enum" else _set_text(column.members)
    text = source.bind("M", index, lookup)
    if library_column.size not in (1, 2):
        raise UncompilableColumn(f"{kind.upper()} of {library_column.size} bytes")
    _length(source, index, library_column.size, indent)
    source.add(indent, f"v_{index} = {text}(n)")


def _emit_bit(source: _Source, index: int, library_column: Any, column: ColumnType, indent: int) -> None:
    size = library_column.bytes
    top_bits = column.bits % 8 if size > 1 else column.bits
    mask = ((1 << (top_bits or 8)) << (8 * (size - 1))) - 1
    source.add(
        indent, f"v_{index} = int.from_bytes(data[pos:pos + {size}], 'big') & {mask}", f"pos += {size}"
    )


def _emit_geometry(source: _Source, index: int, library_column: Any, column: ColumnType, indent: int) -> None:
    _length(source, index, library_column.length_size, indent)
    source.add(indent, f"v_{index} = data[pos + 4:pos + n]", "pos += n")  # the SRID prefix is dropped


_Emitter = Callable[[_Source, int, Any, ColumnType, int], None]
_EMITTERS: dict[str, _Emitter] = {
    "int": _emit_integer,
    "uint": _emit_integer,
    "float": _emit_float,
    "double": _emit_float,
    "decimal": _emit_decimal,
    "date": _emit_date,
    "datetime": _emit_temporal,
    "timestamp": _emit_temporal,
    "time": _emit_temporal,
    "year": _emit_year,
    "text": _emit_string,
    "binary": _emit_string,
    "json": _emit_json,
    "enum": _emit_members,
    "set": _emit_members,
    "bit": _emit_bit,
    "geometry": _emit_geometry,
}


def _text_encoding(charset: str | None) -> str:
    if charset is None:
        raise UncompilableColumn("text column without a character set (binlog_row_metadata not FULL)")
    encoding = RowsEvent.charset_to_encoding(charset)
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise UncompilableColumn(f"character set {charset} has no Python codec") from None
    return encoding


def compile_image_reader(
    library_columns: Sequence[Any], columns: Sequence[ColumnType], primary_key: Sequence[str]
) -> ImageReader:
    """One function reading a whole (FULL) row image of this table; raises UncompilableColumn."""
    source = _Source()
    source.names.update(DATE=_date)
    null_bytes = (len(columns) + 7) // 8
    if null_bytes == 1:
        source.add(1, "nulls = data[pos]")
    else:
        source.add(1, f"nulls = int.from_bytes(data[pos:pos + {null_bytes}], 'little')")
    source.add(1, f"pos += {null_bytes}")
    for index, (library_column, column) in enumerate(zip(library_columns, columns, strict=True)):
        source.add(1, f"if nulls & {1 << index}:", f"    v_{index} = None", "else:")
        try:
            _emit_value(source, index, library_column, column, 2)
        except UncompilableColumn as error:
            raise UncompilableColumn(f"column {column.name!r}: {error}") from None
    positions = {column.name: index for index, column in enumerate(columns)}
    values = ", ".join(f"{column.name!r}: v_{index}" for index, column in enumerate(columns))
    key = "".join(f"v_{positions[name]}, " for name in primary_key)
    source.add(1, f"return {{{values}}}, ({key}), pos")
    code = "def read_image(data, pos):\n" + "\n".join(source.lines) + "\n"
    namespace = dict(source.names)
    exec(compile(code, "<row image reader>", "exec"), namespace)  # noqa: S102 - code built from column types only
    return namespace["read_image"]
