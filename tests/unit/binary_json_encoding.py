"""A small encoder of MySQL binary JSON (the binlog's JSON column format) for tests.

It follows the format in ``airflow_mysql_cdc/engine/binlog/decoding/binary_json.py``'s docstring:
a type byte, then the value; objects and arrays have a count and a byte size (2 bytes each when
small, 4 when large), one (key offset, key length) entry per key, one (type, offset-or-inline) entry
per element, offsets counted from the container's first byte. Keys are stored in the order given
(MySQL stores them sorted by length, then bytes): the decoders must sort them themselves.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from dataclasses import dataclass
from typing import Any

SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY, LITERAL = 0x0, 0x1, 0x2, 0x3, 0x4
INT16, UINT16, INT32, UINT32, INT64, UINT64, DOUBLE, STRING, OPAQUE = (
    0x5, 0x6, 0x7, 0x8, 0x9, 0xA, 0xB, 0xC, 0xF
)  # fmt: skip
_LITERAL_BYTES = {None: 0, True: 1, False: 2}
_INT_FORMATS = {INT16: "<h", UINT16: "<H", INT32: "<i", UINT32: "<I", INT64: "<q", UINT64: "<Q"}


@dataclass(frozen=True)
class Opaque:
    """An OPAQUE value: a MySQL column type byte and the value in that type's storage format."""

    field_type: int
    raw: bytes


@dataclass(frozen=True)
class Encoding:
    """How to encode: ``large`` containers (4-byte counts and offsets), ``unsigned`` for ints >= 0."""

    large: bool = False
    unsigned: bool = False


def length_bytes(length: int) -> bytes:
    """A length in 7-bit groups, least significant first, the high bit marking a following group."""
    out = bytearray()
    while True:
        group = length & 0x7F
        length >>= 7
        if length:
            out.append(group | 0x80)
        else:
            out.append(group)
            return bytes(out)


def _int_kind(value: int, unsigned: bool) -> int:
    if unsigned and value >= 0:
        for kind, limit in ((UINT16, 1 << 16), (UINT32, 1 << 32), (UINT64, 1 << 64)):
            if value < limit:
                return kind
    for kind, bits in ((INT16, 16), (INT32, 32), (INT64, 64)):
        if -(1 << (bits - 1)) <= value < 1 << (bits - 1):
            return kind
    if 0 <= value < 1 << 64:
        return UINT64
    raise ValueError(f"{value} does not fit a binary JSON integer")


def encode_value(value: Any, encoding: Encoding) -> tuple[int, bytes]:
    """The type byte and the bytes of ``value`` as stored at an offset (never inlined)."""
    if value is None or value is True or value is False:
        return LITERAL, bytes([_LITERAL_BYTES[value]])
    if isinstance(value, int):
        kind = _int_kind(value, encoding.unsigned)
        return kind, struct.pack(_INT_FORMATS[kind], value)
    if isinstance(value, float):
        return DOUBLE, struct.pack("<d", value)
    if isinstance(value, str):
        data = value.encode("utf-8")
        return STRING, length_bytes(len(data)) + data
    if isinstance(value, Opaque):
        return OPAQUE, bytes([value.field_type]) + length_bytes(len(value.raw)) + value.raw
    if isinstance(value, dict):
        return _container(list(value.items()), True, encoding)
    if isinstance(value, list):
        return _container([(None, item) for item in value], False, encoding)
    raise TypeError(f"cannot encode {type(value).__name__}")


def _container(items: list[tuple[str | None, Any]], is_object: bool, encoding: Encoding) -> tuple[int, bytes]:
    if not encoding.large:
        try:
            return _layout(items, is_object, encoding, large=False)
        except struct.error:  # an offset or the size does not fit 2 bytes: MySQL makes it large
            pass
    return _layout(items, is_object, encoding, large=True)


def _layout(
    items: list[tuple[str | None, Any]], is_object: bool, encoding: Encoding, large: bool
) -> tuple[int, bytes]:
    word = "I" if large else "H"
    inlined = (LITERAL, INT16, UINT16, INT32, UINT32) if large else (LITERAL, INT16, UINT16)
    count = len(items)
    header_size = 8 if large else 4
    key_entry, value_entry = (6, 5) if large else (4, 3)
    at = header_size + count * ((key_entry if is_object else 0) + value_entry)
    key_entries, value_entries, tail = b"", b"", bytearray()
    for key, _ in items:
        if is_object:
            data = key.encode("utf-8")  # type: ignore[union-attr]
            key_entries += struct.pack("<" + word + "H", at + len(tail), len(data))
            tail += data
    for _, item in items:
        kind, data = encode_value(item, encoding)
        if kind in inlined:
            inline = _LITERAL_BYTES[item] if kind == LITERAL else int.from_bytes(data, "little")
            value_entries += struct.pack("<B" + word, kind, inline)
        else:
            value_entries += struct.pack("<B" + word, kind, at + len(tail))
            tail += data
    size = at + len(tail)
    kind = (LARGE_OBJECT if large else SMALL_OBJECT) if is_object else (LARGE_ARRAY if large else SMALL_ARRAY)
    header = struct.pack("<" + word + word, count, size)
    return kind, header + key_entries + value_entries + bytes(tail)


def encode(value: Any, encoding: Encoding | None = None) -> bytes:
    """A whole binary JSON document (a binlog JSON column's payload) holding ``value``."""
    kind, data = encode_value(value, encoding or Encoding())
    return bytes([kind]) + data


_GROUP_BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)  # bytes holding 0-9 leftover decimal digits


def packed_decimal(value: decimal.Decimal, precision: int, scale: int) -> Opaque:
    """A DECIMAL(precision, scale) inside a document: MySQL's decimal2bin after the precision and scale."""
    with decimal.localcontext(prec=100):  # 65 digits: more than the default context keeps
        scaled = int(abs(value).scaleb(scale).to_integral_value(decimal.ROUND_DOWN))
    integral = str(scaled // 10**scale).zfill(precision - scale) if precision > scale else ""
    fraction = str(scaled % 10**scale).zfill(scale) if scale else ""
    if len(integral) > precision - scale:
        raise ValueError(f"{value} does not fit DECIMAL({precision},{scale})")
    groups: list[str] = []
    leftover = len(integral) % 9
    if leftover:
        groups.append(integral[:leftover])
    groups += [integral[start : start + 9] for start in range(leftover, len(integral), 9)]
    groups += [fraction[start : start + 9] for start in range(0, len(fraction), 9)]
    data = bytearray()
    for digits in groups:
        data += int(digits).to_bytes(_GROUP_BYTES[len(digits)], "big")
    data[0] |= 0x80
    if value.is_signed():
        data = bytearray(byte ^ 0xFF for byte in data)
    return Opaque(246, bytes([precision, scale]) + bytes(data))


DATE, TIME, DATETIME = 10, 11, 12


def packed_temporal(field_type: int, value: datetime.date | datetime.datetime | datetime.timedelta) -> Opaque:
    """A DATE, DATETIME or TIME inside a document: MySQL's TIME_to_longlong_*_packed, 8 bytes."""
    if isinstance(value, datetime.timedelta):
        magnitude = abs(value)
        seconds = magnitude.days * 86400 + magnitude.seconds
        whole = ((seconds // 3600) << 12) | (((seconds // 60) % 60) << 6) | (seconds % 60)
        packed = (whole << 24) | magnitude.microseconds
        packed = -packed if value < datetime.timedelta(0) else packed
    else:
        moment = (
            value
            if isinstance(value, datetime.datetime)
            else datetime.datetime.combine(value, datetime.time())
        )
        year_month = moment.year * 13 + moment.month
        whole = (
            (year_month << 22)
            | (moment.day << 17)
            | (moment.hour << 12)
            | (moment.minute << 6)
            | moment.second
        )
        packed = (whole << 24) | moment.microsecond
    return Opaque(field_type, packed.to_bytes(8, "little", signed=True))
