"""Compressed transactions (``binlog_transaction_compression=ON``, event type 40), decoded.

Invariant: the events inside a ``Transaction_payload_event`` reach the reader exactly as if the
transaction had been logged uncompressed (``BEGIN``, table maps, rows events, the commit marker),
decoded by the same mysql-replication classes with the same table map, so the reader's transaction
rules apply unchanged. mysql-replication 1.0.17 does not know event 40 and would drop the whole
transaction silently (the GTID event arrives, then nothing), which is why the reader never lets
the library filter events. Guarded by ``test_compressed_transactions_are_read_like_plain_ones``.

Format (MySQL ``Transaction_payload_event``): no post-header; a list of ``(type, length, value)``
fields, each a length-encoded integer, ended by type 0 (1: compressed size, 2: compression type,
0 = zstd and 255 = none, 3: uncompressed size); then the payload. The payload is a sequence of whole
events *without* checksums. It is decompressed as a stream, one event at a time, so a large
transaction is never held uncompressed in memory at once.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from typing import IO, Any

from pymysql.protocol import MysqlPacket
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.constants.BINLOG import TABLE_MAP_EVENT

from airflow_mysql_cdc.engine.binlog.internals import decoding_settings, event_payload
from airflow_mysql_cdc.engine.errors import CdcError

_HEADER_END = 0
_COMPRESSED_SIZE = 1
_COMPRESSION_TYPE = 2
_UNCOMPRESSED_SIZE = 3
_ZSTD = 0
_NO_COMPRESSION = 255
_EVENT_HEADER = 19
_CHECKSUM = 4


class PayloadDecodingError(CdcError, ValueError):
    """The payload is not in the documented format, or uses an unknown compression."""


def _length_encoded(data: bytes, offset: int) -> tuple[int, int]:
    first = data[offset]
    if first < 251:
        return first, offset + 1
    if first == 252:
        return struct.unpack_from("<H", data, offset + 1)[0], offset + 3
    if first == 253:
        return int.from_bytes(data[offset + 1 : offset + 4], "little"), offset + 4
    if first == 254:
        return struct.unpack_from("<Q", data, offset + 1)[0], offset + 9
    raise PayloadDecodingError(f"invalid length-encoded integer prefix {first:#x} at byte {offset}")


def payload_stream(raw_event: bytes, has_checksum: bool) -> IO[bytes]:
    """The uncompressed payload of one type-40 event (``raw_event`` from its common header on)."""
    (event_size,) = struct.unpack_from("<I", raw_event, 9)
    body = raw_event[_EVENT_HEADER : event_size - (_CHECKSUM if has_checksum else 0)]
    fields: dict[int, int] = {}
    offset = 0
    while True:
        field_type, offset = _length_encoded(body, offset)
        if field_type == _HEADER_END:
            break
        _, offset = _length_encoded(body, offset)  # the value's length: values are length-encoded too
        fields[field_type], offset = _length_encoded(body, offset)
    payload = body[offset : offset + fields.get(_COMPRESSED_SIZE, len(body) - offset)]
    compression = fields.get(_COMPRESSION_TYPE, _NO_COMPRESSION)
    if compression == _NO_COMPRESSION:
        return io.BytesIO(payload)
    if compression != _ZSTD:
        raise PayloadDecodingError(f"unknown binlog payload compression type {compression}")
    import zstandard  # a dependency of pyspark-client; imported only when a payload arrives

    return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(payload), read_across_frames=True)


def _inner_events(stream: IO[bytes]) -> Iterator[bytes]:
    while True:
        header = stream.read(_EVENT_HEADER)
        if not header:
            return
        (event_size,) = struct.unpack_from("<I", header, 9)
        rest = stream.read(event_size - _EVENT_HEADER) if event_size > _EVENT_HEADER else b""
        if len(header) < _EVENT_HEADER or len(rest) < event_size - _EVENT_HEADER:
            raise PayloadDecodingError("the compressed binlog payload ends in the middle of an event")
        yield header + rest


def payload_events(event: Any, reader: BinLogStreamReader) -> Iterator[Any]:
    """The decoded events carried by a type-40 ``NotImplementedEvent`` read by ``reader``.

    Uses the reader's table map, control connection and decoding settings (private parts of
    mysql-replication, reached through :mod:`.internals`), and keeps its table map up to date exactly
    as ``BinLogStreamReader.fetchone`` does for uncompressed table maps.
    """
    decoding = decoding_settings(reader)
    stream = payload_stream(event_payload(event), decoding.settings["use_checksum"])
    for inner in _inner_events(stream):
        wrapper = decoding.wrap(MysqlPacket(b"\x00" + inner, "utf8"))
        if wrapper.event is None:
            continue
        if wrapper.event_type == TABLE_MAP_EVENT:
            reader.table_map[wrapper.event.table_id] = wrapper.event.get_table()
        yield wrapper.event
