"""The connection to the server's binlog dump, owned by us: how it opens, fails and is checked.

Invariants, each forced by a measured behaviour of mysql-replication 1.0.17 on MySQL 9.7:

- **An empty start set means the whole history.** The library treats a falsy ``auto_position``
  as "no GTID mode" and starts in the server's *current* binlog file, silently skipping history (on
  a new server: every transaction in earlier files). :func:`replication_position` hands it a truthy
  stand-in for the empty set, so the GTID dump is sent with zero UUIDs and the server streams from
  its oldest binlog, or refuses with "purged" if history is gone. Guarded by
  ``test_empty_start_reads_every_retained_transaction_on_a_fresh_server``.
- **Nobody reconnects behind our back.** On errors 2006/2013 (a killed dump thread, a dropped
  socket) the library reconnects by itself from the ``auto_position`` it was created with and
  re-delivers everything since (upstream issue #367). Our connection class turns those errors into
  :class:`StreamInterrupted`, which the library does not catch, so the reader sees every
  interruption and reopens from *its* position. Guarded by
  ``test_killed_dump_thread_resumes_without_duplicates_or_gaps``.
- **Every unknown event reaches us.** ``filter_non_implemented_events=False`` and no
  ``only_events`` list: the library's class filter is an exact class match that drops
  ``PartialUpdateRowsEvent`` and would hide compressed payloads (type 40) and tagged GTID events
  (type 42). The reader decides about every event type itself.
- **One server_id per concurrent reader** (see :func:`claim_server_id`) and a fresh replica UUID per
  connection. Measured on MySQL 9.7: a new dump evicts an older one with the same server_id when
  neither sent a replica UUID, or both sent the same one (error 1236, "A replica with the same
  server_uuid/server_id ... has connected"); with distinct UUIDs both survive. Ours always send a
  fresh UUID, so they neither evict nor get evicted (guarded by
  ``test_a_replica_with_our_server_id_neither_evicts_us_nor_is_evicted``); should the server still
  send that error, it surfaces as :class:`DuplicateServerIdError`, never as a reconnect loop.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, SupportsIndex

import pymysql
from pymysqlreplication import BinLogStreamReader

from airflow_mysql_cdc.engine.binlog.errors import (
    BinlogPositionRejectedError,
    BinlogPurgedError,
    DuplicateServerIdError,
    UnsupportedServerSettingError,
)
from airflow_mysql_cdc.engine.binlog.internals import (
    OwnedReconnectConnection,
    tolerate_unknown_query_status_variables,
)
from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.mysql.prerequisites.requirements import STREAM_SETTINGS
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet

# Errors after which the same read can continue on a new connection: lost connection (2013), gone
# away (2006), server shutdown (1053), connection killed (1927), read/write failure (2055).
TRANSIENT_ERROR_CODES = frozenset({1053, 1927, 2006, 2013, 2055})
# ...and while reconnecting, a server that is not listening yet (2003).
RECONNECTABLE_ERROR_CODES = TRANSIENT_ERROR_CODES | {2003}
ER_SOURCE_FATAL_ERROR_READING_BINLOG = 1236
_MAX_SERVER_ID = 2**32 - 1


class StreamInterrupted(CdcError):
    """The dump connection dropped; deliberately not a ``pymysql.OperationalError``."""

    def __init__(self, cause: BaseException) -> None:
        self.cause = cause
        super().__init__(repr(cause))


class DumpConnection(OwnedReconnectConnection):
    """The dump connection: a dropped connection surfaces as :class:`StreamInterrupted`."""

    transient_codes = TRANSIENT_ERROR_CODES
    interrupted = StreamInterrupted


class _EmptyGtidSetText(str):
    """The empty GTID set, spelled so that mysql-replication still sends a GTID dump.

    The library tests ``if not auto_position`` to choose file positioning, then builds its set with
    ``text.split(",")``; this value is truthy and splits into no elements, i.e. zero UUIDs.
    """

    def __bool__(self) -> bool:
        return True

    def split(self, sep: Any = None, maxsplit: SupportsIndex = -1) -> list[str]:
        return []


def replication_position(position: GtidSet) -> str:
    """The ``auto_position`` argument for a GTID dump from ``position`` (empty set included)."""
    return position.to_replication_position() if position else _EmptyGtidSetText("")


# --- server ids ------------------------------------------------------------------------------

_claimed_lock = threading.Lock()
_claimed: dict[tuple[str, int, int], str] = {}


def random_server_id() -> int:
    """A server_id in the upper half of the range, where real replicas rarely live."""
    return random.randint(2**31, _MAX_SERVER_ID)


@contextmanager
def claim_server_id(endpoint: MySqlEndpoint, server_id: int, holder: str) -> Iterator[None]:
    """Reserve ``server_id`` on this server for this process while a read runs.

    The server identifies replicas by server_id, and one connecting without a replica UUID evicts
    the older dump with its id (see the module docstring).
    Inside one process (parallel range readers, a backfill next to the main stream) we refuse the
    duplicate up front. Across processes the caller must hand out distinct ids.
    Guarded by ``test_concurrent_readers_must_use_distinct_server_ids``.
    """
    if not 1 <= server_id <= _MAX_SERVER_ID:
        raise ValueError(f"server_id must be in 1..{_MAX_SERVER_ID}, got {server_id}")
    key = (endpoint.host, endpoint.port, server_id)
    with _claimed_lock:
        if key in _claimed:
            raise DuplicateServerIdError(server_id, _claimed[key])
        _claimed[key] = holder
    try:
        yield
    finally:
        with _claimed_lock:
            _claimed.pop(key, None)


# --- opening the stream ----------------------------------------------------------------------


@dataclass(frozen=True)
class StreamSettings:
    server_id: int
    heartbeat_s: float
    read_timeout_s: int
    only_schemas: frozenset[str] | None
    only_tables: frozenset[str] | None


def open_stream(endpoint: MySqlEndpoint, position: GtidSet, settings: StreamSettings) -> BinLogStreamReader:
    connection_settings = endpoint.connection_kwargs()
    connection_settings.pop("database", None)  # the library points its control connection elsewhere
    connection_settings["read_timeout"] = settings.read_timeout_s
    tolerate_unknown_query_status_variables()  # a statement's event must reach the handler (internals)
    return BinLogStreamReader(
        connection_settings=connection_settings,
        server_id=settings.server_id,
        auto_position=replication_position(position),
        blocking=True,
        resume_stream=True,
        only_events=None,
        filter_non_implemented_events=False,
        only_schemas=sorted(settings.only_schemas) if settings.only_schemas else None,
        only_tables=sorted(settings.only_tables) if settings.only_tables else None,
        # Table maps are parsed once per table id: the reader drops them at the start of every
        # binlog file and on every reconnect, and a tracked table's definition cannot change under
        # a cached id in between because DDL on it stops the read.
        freeze_schema=True,
        slave_heartbeat=settings.heartbeat_s,
        slave_uuid=str(uuid.uuid4()),
        # TLS fallback (PREFERRED on a server without TLS) and login errors as for every connection.
        pymysql_wrapper=endpoint.connection_factory(DumpConnection),
        enable_logging=False,
    )


def rejection_error(
    error: pymysql.err.OperationalError, position: GtidSet, endpoint: MySqlEndpoint, server_id: int
) -> BinlogPurgedError | BinlogPositionRejectedError | DuplicateServerIdError:
    """The typed error for a server ending the dump with 1236, with the missing set when purged."""
    code, message = error.args[0], str(error.args[1]) if len(error.args) > 1 else str(error)
    if "same server_uuid/server_id" in message:
        # Measured on MySQL 9.7: a dump connecting without a replica UUID makes the server close
        # any other dump with its server_id (ours have a UUID each, so they never do this to us).
        return DuplicateServerIdError(server_id, f"another replica connection; the server said: {message}")
    if "purged" in message.lower():
        with endpoint.connect() as connection, connection.cursor() as cursor:
            cursor.execute("SELECT @@GLOBAL.gtid_purged")
            purged = GtidSet.parse(cursor.fetchone()[0])
        return BinlogPurgedError(missing=purged - position, position=position, server_message=message)
    return BinlogPositionRejectedError(position=position, code=code, server_message=message)


# --- the control connection ------------------------------------------------------------------


class ControlConnection:
    """A plain SQL connection next to the dump: settings checks, the clock, ``gtid_executed``."""

    def __init__(self, endpoint: MySqlEndpoint) -> None:
        self._endpoint = endpoint
        self._connection: pymysql.connections.Connection | None = None

    def _cursor(self) -> pymysql.cursors.Cursor:
        if self._connection is None or not self._connection.open:
            # UTC session: UNIX_TIMESTAMP(NOW(6)) is then exact even across a DST change.
            endpoint = self._endpoint.with_database(None)
            self._connection = endpoint.connect(init_command="SET time_zone = '+00:00'")
        return self._connection.cursor()

    def _scalar(self, sql: str) -> Any:
        try:
            with self._cursor() as cursor:
                cursor.execute(sql)
                return cursor.fetchone()[0]
        except (pymysql.err.OperationalError, pymysql.err.InterfaceError):
            self.close()  # reconnect on the next call
            raise

    def gtid_executed(self) -> GtidSet:
        return GtidSet.parse(self._scalar("SELECT @@GLOBAL.gtid_executed"))

    def now_us(self) -> int:
        return int(self._scalar("SELECT UNIX_TIMESTAMP(NOW(6))") * 1_000_000)

    def check_settings(self, server_id: int) -> None:
        """The settings of :data:`STREAM_SETTINGS` (the prerequisites' one table), and our server_id."""
        names = [setting.name for setting in STREAM_SETTINGS]
        with self._cursor() as cursor:
            cursor.execute("SELECT " + ", ".join(f"@@GLOBAL.{name}" for name in names) + ", @@server_id")
            *values, source_server_id = cursor.fetchone()
        for setting, value in zip(STREAM_SETTINGS, values, strict=True):
            if not setting.is_met_by(str(value)):
                raise UnsupportedServerSettingError(setting.name, str(value), setting.expected, setting.why)
        if int(source_server_id) == server_id:
            raise DuplicateServerIdError(
                server_id, f"the source server {self._endpoint} itself (@@server_id)"
            )

    def close(self) -> None:
        if self._connection is not None:
            with suppress(pymysql.err.Error):
                self._connection.close()
            self._connection = None
