"""MySQL's binary JSON (the binlog's JSON column format) to the canonical JSON text of
:mod:`~airflow_mysql_cdc.engine.mysql.normalise`.

Invariant: ``canonical_json(binary_json_value(payload))`` is the text ``canonical_json`` prints for
the document MySQL's ``SELECT`` shows for that column, and for every payload it is the text the
mysql-replication path gave (``parse_json`` plus ``mysql_types`` normalisation), with one exception
where the library was wrong: a document that is the JSON literal ``null`` is the text ``"null"``
here, while the library returns None for it, which the lake stored as SQL NULL (``SELECT`` shows
``null``). Guarded by ``test_the_compiled_decoder_gives_the_library_values_for_every_type`` and
``test_every_type_maps_to_identical_arrow_values_from_select_and_binlog``.

Why not the library's parser: it copies the rest of the document at every value it visits
(``bytes[value_offset:]``), decodes every header field with a separate ``struct.unpack`` of a fresh
slice, and yields bytes that must be decoded in a second walk; it was about 30% of the bare loop's
time on the benchmark table (docs/benchmarks.md). This parser reads each container's header in
one ``unpack_from`` with a cached ``Struct`` and decodes strings in place.

Format (``sql-common/json_binary.cc``): a type byte, then the value. Objects and arrays start with
an element count and a byte size (2 bytes each when *small*, 4 when *large*), then for objects one
(key offset, key length) entry per key, then one (type, offset-or-inline value) entry per element;
offsets count from the container's first byte. LITERAL, INT16 and UINT16 are inlined in the entry,
INT32 and UINT32 only in large containers. Strings carry a length of 7-bit groups. OPAQUE values
are a MySQL type byte, a length and the value in that type's storage format: a DECIMAL (from
``JSON_OBJECT('p', price)``) becomes a float, as ``json.loads`` makes it of the printed document;
dates and times become the text MySQL prints for them (``"2024-01-02 03:04:05.500000"``,
``"-01:00:01.250000"``, ``"2024-01-02"``) and other opaque values MySQL's ``"base64:typeN:..."``
text. The library crashed the reader on temporal values in documents (``datetime`` is not JSON
serialisable, and TIME over 23 hours does not fit ``datetime.time``) and printed binary values as
undecodable text; ``test_dates_times_and_binary_values_inside_json_print_as_select_prints_them``.
"""

from __future__ import annotations

import base64
from functools import lru_cache
from struct import Struct
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE

from airflow_mysql_cdc.engine.binlog.decoding.packed_decimal import packed_decimal_reader
from airflow_mysql_cdc.engine.errors import CdcError

_SMALL_OBJECT, _LARGE_OBJECT, _SMALL_ARRAY, _LARGE_ARRAY, _LITERAL = 0x0, 0x1, 0x2, 0x3, 0x4
_INT16, _UINT16, _INT32, _UINT32, _INT64, _UINT64, _DOUBLE, _STRING, _OPAQUE = (
    0x5, 0x6, 0x7, 0x8, 0x9, 0xA, 0xB, 0xC, 0xF
)  # fmt: skip
_LITERALS = {0: None, 1: True, 2: False}

_U16 = Struct("<H").unpack_from
_U32 = Struct("<I").unpack_from
_SCALARS = {
    _INT16: Struct("<h").unpack_from,
    _UINT16: _U16,
    _INT32: Struct("<i").unpack_from,
    _UINT32: _U32,
    _INT64: Struct("<q").unpack_from,
    _UINT64: Struct("<Q").unpack_from,
    _DOUBLE: Struct("<d").unpack_from,
}


class BinaryJsonError(CdcError, ValueError):
    """The payload is not a MySQL binary JSON document (unknown type byte, bad literal)."""


@lru_cache(maxsize=512)
def _entries(count: int, small: bool, is_object: bool) -> Struct:
    """One Struct reading all key entries (objects) and value entries of a container at once."""
    offset = "H" if small else "I"  # a key entry is (offset, uint16 length); a value entry (type, offset)
    return Struct("<" + ((offset + "H") * count if is_object else "") + ("B" + offset) * count)


def _length(data: bytes, at: int) -> tuple[int, int]:
    """A length of 7-bit groups (least significant first) and the offset after it."""
    length = data[at]
    at += 1
    if length & 0x80:
        length &= 0x7F
        shift = 7
        while True:
            byte = data[at]
            at += 1
            length |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
    return length, at


def _string(data: bytes, at: int) -> str:
    length, at = _length(data, at)
    return data[at : at + length].decode("utf-8")


_DATE_TYPES = frozenset((FIELD_TYPE.DATE, FIELD_TYPE.NEWDATE))
_DATETIME_TYPES = frozenset(
    (FIELD_TYPE.DATETIME, FIELD_TYPE.DATETIME2, FIELD_TYPE.TIMESTAMP, FIELD_TYPE.TIMESTAMP2)
)
_TIME_TYPES = frozenset((FIELD_TYPE.TIME, FIELD_TYPE.TIME2))


def _opaque(data: bytes, at: int) -> Any:
    field_type = data[at]
    length, at = _length(data, at + 1)
    raw = data[at : at + length]
    if field_type in (FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.DECIMAL):
        # precision, scale, then the packed DECIMAL (the column format)
        return float(packed_decimal_reader(raw[0], raw[1])(raw, 2))
    if field_type in _DATE_TYPES or field_type in _DATETIME_TYPES or field_type in _TIME_TYPES:
        return _temporal_text(field_type, int.from_bytes(raw[:8], "little", signed=True))
    return f"base64:type{field_type}:{base64.b64encode(raw).decode('ascii')}"


def _temporal_text(field_type: int, packed: int) -> str:
    """MySQL's packed temporal value (``TIME_to_longlong_*_packed``) as MySQL prints it in JSON."""
    sign = "-" if packed < 0 else ""
    packed = abs(packed)
    whole, microsecond = packed >> 24, packed & 0xFFFFFF
    second, minute = whole & 0x3F, (whole >> 6) & 0x3F
    if field_type in _TIME_TYPES:
        hour = (whole >> 12) & 0x3FF
        return f"{sign}{hour:02d}:{minute:02d}:{second:02d}.{microsecond:06d}"
    hour = (whole >> 12) & 0x1F
    year_month, day = whole >> 22, (whole >> 17) & 0x1F
    date = f"{year_month // 13:04d}-{year_month % 13:02d}-{day:02d}"
    if field_type in _DATE_TYPES:
        return date
    return f"{date} {hour:02d}:{minute:02d}:{second:02d}.{microsecond:06d}"


def _value(data: bytes, kind: int, at: int) -> Any:
    """The value of type ``kind`` stored at absolute offset ``at`` (not inlined)."""
    if kind == _STRING:
        return _string(data, at)
    if kind <= _LARGE_ARRAY:
        return _container(data, at, kind)
    if kind == _LITERAL:
        try:
            return _LITERALS[data[at]]
        except KeyError:
            raise BinaryJsonError(f"JSON literal byte {data[at]} is not null, true or false") from None
    scalar = _SCALARS.get(kind)
    if scalar is not None:
        return scalar(data, at)[0]
    if kind == _OPAQUE:
        return _opaque(data, at)
    raise BinaryJsonError(f"JSON value type {kind} is not a MySQL binary JSON type")


def _inline(kind: int, raw: int) -> Any:
    """A value stored in its entry's offset field (read as an unsigned 2- or 4-byte integer)."""
    if kind == _INT16:
        raw &= 0xFFFF
        return raw - 0x10000 if raw & 0x8000 else raw
    if kind == _UINT16:
        return raw & 0xFFFF
    if kind == _LITERAL:
        try:
            return _LITERALS[raw & 0xFF]
        except KeyError:
            raise BinaryJsonError(f"JSON literal byte {raw & 0xFF} is not null, true or false") from None
    if kind == _INT32:
        return raw - 0x100000000 if raw & 0x80000000 else raw
    return raw  # _UINT32


def _container(data: bytes, base: int, kind: int) -> Any:
    small = kind in (_SMALL_OBJECT, _SMALL_ARRAY)
    is_object = kind in (_SMALL_OBJECT, _LARGE_OBJECT)
    count = _U16(data, base)[0] if small else _U32(data, base)[0]
    fields = _entries(count, small, is_object).unpack_from(data, base + (4 if small else 8))
    inlined = (_LITERAL, _INT16, _UINT16) if small else (_LITERAL, _INT16, _UINT16, _INT32, _UINT32)
    values: list[Any] = []
    append = values.append
    first_value = 2 * count if is_object else 0
    for index in range(first_value, first_value + 2 * count, 2):
        value_kind = fields[index]
        raw = fields[index + 1]
        if value_kind == _STRING:
            append(_string(data, base + raw))
        elif value_kind in inlined:
            append(_inline(value_kind, raw))
        else:
            append(_value(data, value_kind, base + raw))
    if not is_object:
        return values
    keys = [
        data[base + fields[index] : base + fields[index] + fields[index + 1]].decode("utf-8")
        for index in range(0, 2 * count, 2)
    ]
    return dict(zip(keys, values, strict=True))


def binary_json_value(payload: bytes) -> Any:
    """The Python value (str keys and strings, int, float, bool, None) of one binary JSON document."""
    if not payload:
        raise BinaryJsonError("an empty JSON payload is not a document")
    return _value(payload, payload[0], 1)
