"""Every access to a private part of mysql-replication and PyMySQL, in one place.

Invariant: no other module of the engine reads a private attribute of these libraries or overrides
a private method; what we need from their insides is a function here, named after what it gives.
:data:`PRIVATE_PARTS` lists each part, and ``test_the_private_parts_we_use_exist_in_the_installed_libraries``
checks them on the installed versions, so an upgrade that moves one fails that test instead of a
pipeline.

Why we reach inside at all (mysql-replication 1.0.17 is pinned in pyproject.toml):
- the dump connection's transient read errors must reach our reconnect logic instead of the
  library's own silent retry (:class:`OwnedReconnectConnection`);
- compressed transactions (event type 40) are unknown to the library, so we decode their inner
  events with its classes, its table map and its settings (:func:`decoding_settings`);
- the compiled row decoder reads row images straight from the packet buffer
  (:func:`unread_row_images`).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import pymysql
from pymysql.protocol import MysqlPacket
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.packet import BinLogPacketWrapper

_READER = "_BinLogStreamReader__"
_WRAPPER_DATA_BUFFER = "_BinLogPacketWrapper__data_buffer"
_READER_SETTINGS = (
    "use_checksum",
    "allowed_events_in_packet",
    "only_tables",
    "ignored_tables",
    "only_schemas",
    "ignored_schemas",
    "freeze_schema",
    "ignore_decode_errors",
    "optional_meta_data",
    "use_column_name_cache",
    "post_header_lengths",
)

PRIVATE_PARTS: tuple[str, ...] = (
    "pymysql.connections.Connection._read_packet",
    "pymysql.protocol.MysqlPacket._data",
    "pymysql.protocol.MysqlPacket._position",
    "pymysqlreplication.BinLogStreamReader._ctl_connection",
    *(f"pymysqlreplication.BinLogStreamReader.{_READER}{name}" for name in _READER_SETTINGS),
    f"pymysqlreplication.packet.BinLogPacketWrapper.{_WRAPPER_DATA_BUFFER}",
)


def missing_private_parts() -> list[str]:
    """The parts of :data:`PRIVATE_PARTS` the installed libraries do not have (empty when all exist)."""
    missing = []
    if not callable(getattr(pymysql.connections.Connection, "_read_packet", None)):
        missing.append("pymysql.connections.Connection._read_packet")
    packet = MysqlPacket(b"\x00", "utf8")
    missing += [
        f"pymysql.protocol.MysqlPacket.{name}" for name in ("_data", "_position") if not hasattr(packet, name)
    ]
    reader = BinLogStreamReader(
        connection_settings={"host": "127.0.0.1", "port": 1, "user": "-"}, server_id=1
    )
    missing += [
        f"pymysqlreplication.BinLogStreamReader.{_READER}{name}"
        for name in _READER_SETTINGS
        if _READER + name not in vars(reader)
    ]
    # Set only once connected: its assignment must be in the library's source.
    if "self._ctl_connection =" not in inspect.getsource(BinLogStreamReader):
        missing.append("pymysqlreplication.BinLogStreamReader._ctl_connection")
    if "self.__data_buffer" not in inspect.getsource(BinLogPacketWrapper):
        missing.append(f"pymysqlreplication.packet.BinLogPacketWrapper.{_WRAPPER_DATA_BUFFER}")
    return missing


class OwnedReconnectConnection(pymysql.connections.Connection):
    """A PyMySQL connection whose transient read errors escape mysql-replication's own retry.

    A subclass (:mod:`.stream`'s) sets ``transient_codes`` and the ``interrupted`` exception that an
    ``OperationalError`` with one of those codes becomes.
    """

    transient_codes: frozenset[int] = frozenset()
    interrupted: type[Exception] = Exception

    def _read_packet(self, packet_type: type = MysqlPacket) -> Any:
        try:
            return super()._read_packet(packet_type)
        except pymysql.err.OperationalError as error:
            if error.args and error.args[0] in self.transient_codes:
                raise self.interrupted(error) from error
            raise


@dataclass(frozen=True)
class DecodingSettings:
    """What the library needs to decode an event the way ``reader`` would, taken from ``reader``."""

    table_map: dict[int, Any]
    control_connection: Any
    mysql_version: Any
    settings: dict[str, Any]

    def wrap(self, packet: MysqlPacket) -> BinLogPacketWrapper:
        """Decode one event packet (without checksum) with the reader's table map and settings."""
        s = self.settings
        return BinLogPacketWrapper(
            packet,
            self.table_map,
            self.control_connection,
            self.mysql_version,
            False,  # events inside a payload carry no checksum
            s["allowed_events_in_packet"],
            s["only_tables"],
            s["ignored_tables"],
            s["only_schemas"],
            s["ignored_schemas"],
            s["freeze_schema"],
            s["ignore_decode_errors"],
            False,
            s["optional_meta_data"],
            False,
            s["use_column_name_cache"],
            s["post_header_lengths"],
        )


def decoding_settings(reader: BinLogStreamReader) -> DecodingSettings:
    """The reader's table map, control connection and private decoding settings."""
    state = vars(reader)
    return DecodingSettings(
        table_map=reader.table_map,
        control_connection=reader._ctl_connection,
        mysql_version=reader.mysql_version,
        settings={name: state[_READER + name] for name in _READER_SETTINGS},
    )


def event_payload(event: Any) -> bytes:
    """The raw bytes of the event ``event`` was decoded from (the packet's leading OK byte stripped)."""
    return bytes(event.packet.packet._data[1:])


def unread_row_images(event: Any) -> tuple[bytes, int, int] | None:
    """The packet buffer and the offsets of this rows event's row images, if the library has not read them."""
    wrapper = event.packet
    if getattr(wrapper, _WRAPPER_DATA_BUFFER, b"") or not event.complete:
        return None
    packet = wrapper.packet
    data = getattr(packet, "_data", None)
    if not isinstance(data, bytes):
        return None
    start = packet._position
    return data, start, start + event.event_size - wrapper.read_bytes
