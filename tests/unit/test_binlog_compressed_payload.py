"""Compressed transaction payloads are unpacked into the events they carry, or refused clearly."""

from __future__ import annotations

import struct

import pytest
import zstandard

from airflow_mysql_cdc.engine.binlog.compressed_payload import PayloadDecodingError, payload_stream


def _event(event_type: int, body: bytes) -> bytes:
    size = 19 + len(body)
    return struct.pack("<IBIII H", 0, event_type, 1, size, 0, 0)[:19] + body


def _length_encoded(value: int) -> bytes:
    return bytes([value]) if value < 251 else b"\xfc" + struct.pack("<H", value)


def _field(field_type: int, value: int) -> bytes:
    encoded = _length_encoded(value)
    return bytes([field_type, len(encoded)]) + encoded


def _payload_event(payload: bytes, compression: int, uncompressed: int, checksum: bool) -> bytes:
    fields = _field(1, len(payload)) + _field(2, compression) + _field(3, uncompressed)
    body = fields + b"\x00" + payload
    size = 19 + len(body) + (4 if checksum else 0)
    header = struct.pack("<IBIIIH", 0, 40, 1, size, 0, 0)
    return header + body + (b"CRC!" if checksum else b"")


INNER = _event(2, b"BEGIN-ish") + _event(16, b"\x01" * 8)


@pytest.mark.parametrize("checksum", [True, False])
def test_zstd_payload_yields_the_inner_events_byte_for_byte(checksum: bool):
    compressed = zstandard.ZstdCompressor().compress(INNER)
    stream = payload_stream(_payload_event(compressed, 0, len(INNER), checksum), has_checksum=checksum)
    assert stream.read() == INNER


def test_uncompressed_payload_is_passed_through():
    assert payload_stream(_payload_event(INNER, 255, len(INNER), True), has_checksum=True).read() == INNER


def test_unknown_compression_is_refused():
    with pytest.raises(PayloadDecodingError, match="compression type 7"):
        payload_stream(_payload_event(INNER, 7, len(INNER), True), has_checksum=True)
