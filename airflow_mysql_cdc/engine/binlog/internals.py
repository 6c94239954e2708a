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
  (:func:`unread_row_images`);
- MySQL 9.7 logs a statement (a session with ``binlog_format=STATEMENT``/``MIXED``) with a query
  status variable (code 21) the library does not know, and it then refuses the whole event, so the
  reader could not even say which table the statement changed. The status variables are a block of
  stated length, and nothing the reader needs is in it: :func:`tolerate_unknown_query_status_variables`
  makes the library skip the rest of the block at an unknown code instead
  (``test_a_query_event_with_an_unknown_status_variable_keeps_its_schema_and_statement``);
- the library parses an ``EXECUTE_LOAD_QUERY`` event (a statement-logged ``LOAD DATA``) without its
  statement: :func:`load_query_statement` reads it from the event's bytes.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import pymysql
from pymysql.protocol import MysqlPacket
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import ExecuteLoadQueryEvent, QueryEvent
from pymysqlreplication.exceptions import StatusVariableMismatch
from pymysqlreplication.packet import BinLogPacketWrapper

_READER = "_BinLogStreamReader__"
_QUERY_STATUS_READER = "_read_status_vars_value_for_key"
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
    f"pymysqlreplication.event.QueryEvent.{_QUERY_STATUS_READER}",
    "pymysqlreplication.event.BinLogEvent._declared_post_header_len",
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
    # The tolerant status reader relies on the library's loop: read a one-byte code, then call it.
    query_source = inspect.getsource(QueryEvent.__init__)
    if "status_vars_key = self.packet.read_uint8()" not in query_source or not callable(
        vars(QueryEvent).get(_QUERY_STATUS_READER)
    ):
        missing.append(f"pymysqlreplication.event.QueryEvent.{_QUERY_STATUS_READER}")
    if not callable(getattr(ExecuteLoadQueryEvent, "_declared_post_header_len", None)):
        missing.append("pymysqlreplication.event.BinLogEvent._declared_post_header_len")
    return missing


_library_status_reader = QueryEvent.__dict__[_QUERY_STATUS_READER]


def _tolerant_status_reader(event: Any, key: int) -> None:
    """The library's reader of one status variable, which at an unknown ``key`` skips the rest of the
    block (its length is in the event's post-header) instead of refusing the event.

    Called by the library right after it read ``key`` (one byte), so on the first call of an event
    the block ends ``status_vars_length - 1`` bytes further on.
    """
    state = vars(event)
    if "_cdc_status_vars_end" not in state:
        state["_cdc_status_vars_end"] = event.packet.read_bytes - 1 + event.status_vars_length
    try:
        _library_status_reader(event, key)
    except StatusVariableMismatch:
        remaining = state["_cdc_status_vars_end"] - event.packet.read_bytes
        if remaining < 0:
            raise
        event.packet.advance(remaining)


def tolerate_unknown_query_status_variables() -> None:
    """Make mysql-replication skip query status variables it does not know (idempotent; see the
    module docstring). Only an event the library refused changes: every other parses as before."""
    setattr(QueryEvent, _QUERY_STATUS_READER, _tolerant_status_reader)


_LOAD_QUERY_POST_HEADER = 26
"""An EXECUTE_LOAD_QUERY event's post-header: the query event's 13 bytes, then file id, the file
name's start and end offsets in the statement and the duplicate handling (4 + 4 + 4 + 1)."""


def load_query_statement(event: ExecuteLoadQueryEvent) -> tuple[str, str]:
    """``(default schema, statement)`` of a statement-logged ``LOAD DATA`` (its event's bytes)."""
    header = 19
    body = event_payload(event)[header : header + event.event_size]
    post_header = event._declared_post_header_len(_LOAD_QUERY_POST_HEADER)
    schema_length = body[8]
    status_length = int.from_bytes(body[11:13], "little")
    schema_start = post_header + status_length
    schema = body[schema_start : schema_start + schema_length].decode("utf-8", "backslashreplace")
    statement = body[schema_start + schema_length + 1 :].decode("utf-8", "backslashreplace")
    return schema, statement


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
