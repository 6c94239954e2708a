"""Read the binlog from a GTID set as whole committed transactions, with typed failures.

Invariant: after :meth:`BinlogReader.read` yields a transaction, ``reader.position`` is ``start``
united with the GTID of every transaction yielded so far, and nothing else. Reading again from
that position yields exactly the rest of the binlog: no duplicate, no gap. It holds because

1. a transaction is yielded only at its commit marker (``XidEvent``; ``COMMIT`` for
   non-transactional engines; the DDL or ``XA COMMIT`` statement that is its own transaction; the
   ``XA_PREPARE`` event), and its GTID enters the position at that moment, never earlier;
2. the server streams by GTID auto-position, i.e. it sends exactly the transactions *not* in the set
   we send, in binlog order (the empty set too: see :mod:`.stream`);
3. every transaction is yielded, also those without tracked rows (``changes`` empty), so table
   filtering never stalls progress (``test_filtered_transactions_still_advance_the_position``);
4. a lost connection discards the open transaction and reopens from ``position``; a GTID already
   in the position is dropped if the server sends it again
   (``test_killed_dump_thread_resumes_without_duplicates_or_gaps``);
5. anything that would make a transaction's rows unknowable (an undecodable compressed payload, a
   tagged GTID, missing row-image columns or names, statement-logged change, two-phase XA on a
   tracked table unless ``mark_statement_changes``, and DDL on a tracked table unless
   ``evolve_schema``) raises a :mod:`.errors` exception *before* that transaction is yielded. With
   ``mark_statement_changes`` a statement-logged data change of a tracked table is yielded on its
   transaction as a :class:`~.changes.StatementChange` (its rows are unknown: the applier stops or
   re-snapshots the table). With ``evolve_schema`` a DDL statement
   that may change a tracked table is yielded as its own transaction, with no rows and its
   :class:`~.changes.SchemaChange`: rows after it arrive with their new table map (a new table id),
   so they are decoded with the new definition;
6. rows are decoded with the table map of their own binlog file: compressed payloads are unpacked
   into ordinary events, and the library's table maps are dropped at the start of every file,
   because table ids restart with the server
   (``test_table_ids_reused_after_a_restart_are_decoded_with_the_new_table``).

The reader is a loop and a handler, in the shape of go-mysql's canal: :meth:`BinlogReader._stream`
fetches events and owns reconnects (point 4); :class:`~.events.EventHandler` gives each event its
meaning (points 1, 3, 5, 6), feeding a compressed payload's events back into itself; what spans the
events of one transaction is an :class:`~.transaction.OpenTransaction`, and a new handler is made
for every read, so nothing of one read's open transaction can leak into the next.

Resume exactness over many random stop points is checked by
``test_reading_in_random_segments_equals_one_full_read``. The algorithm, guarantees and hazard
guards are described in docs/binlog-reader.md.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass

import pymysql
from pymysqlreplication import BinLogStreamReader

from airflow_mysql_cdc.engine.binlog.backpressure import DEFAULT_MAX_BUFFERED_BYTES, ChangeBuffer
from airflow_mysql_cdc.engine.binlog.changes import Transaction
from airflow_mysql_cdc.engine.binlog.decoding.rows import RowDecoder
from airflow_mysql_cdc.engine.binlog.errors import ConnectionLostError, UndecodableEventError
from airflow_mysql_cdc.engine.binlog.events import UNDECODABLE, EventHandler
from airflow_mysql_cdc.engine.binlog.position import PositionTracker
from airflow_mysql_cdc.engine.binlog.stop_rules import Live, StopRule
from airflow_mysql_cdc.engine.binlog.stream import (
    ER_SOURCE_FATAL_ERROR_READING_BINLOG,
    RECONNECTABLE_ERROR_CODES,
    ControlConnection,
    StreamInterrupted,
    StreamSettings,
    claim_server_id,
    open_stream,
    random_server_id,
    rejection_error,
)
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet


@dataclass(frozen=True)
class ReconnectPolicy:
    """Bounded reconnects with exponential backoff; the count resets after each transaction read."""

    max_attempts: int = 5
    initial_backoff_s: float = 0.2
    max_backoff_s: float = 10.0

    def backoff_s(self, attempt: int) -> float:
        return min(self.max_backoff_s, self.initial_backoff_s * 2 ** (attempt - 1))


def _parse_tracked(tables: Iterable[str] | None) -> frozenset[tuple[str, str]] | None:
    if tables is None:
        return None
    parsed = set()
    for name in tables:
        schema, dot, table = name.partition(".")
        if not dot or not schema or not table:
            raise ValueError(f"tracked tables are named 'schema.table', got {name!r}")
        parsed.add((schema, table))
    return frozenset(parsed)


class BinlogReader:
    """Reads one server's binlog; one ``read`` at a time per reader object.

    ``tables`` are ``"schema.table"`` names whose rows are decoded and yielded (None: every table).
    Transactions on other tables are still yielded, with no changes, so the position advances.
    ``evolve_schema`` says what DDL on a tracked table does: False raises
    :class:`~.errors.SchemaChangeError` before it, True yields it (module docstring, point 5; it needs
    named ``tables``). ``mark_statement_changes`` likewise yields a statement-logged data change of a
    tracked table as a :class:`~.changes.StatementChange` instead of raising
    :class:`~.errors.StatementBasedChangeError` (it needs named ``tables`` too).
    The pipeline's ``schema_changes`` mode is checked where it is configured
    (:func:`~airflow_mysql_cdc.engine.apply.config.check_schema_change_mode`), not here.
    """

    def __init__(
        self,
        endpoint: MySqlEndpoint,
        *,
        tables: Iterable[str] | None = None,
        server_id: int | None = None,
        heartbeat_s: float = 1.0,
        max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
        reconnect: ReconnectPolicy = ReconnectPolicy(),
        compiled_decoding: bool = True,
        evolve_schema: bool = False,
        mark_statement_changes: bool = False,
    ) -> None:
        self.endpoint = endpoint
        self.tracked = _parse_tracked(tables)
        self.evolve_schema = evolve_schema and self.tracked is not None
        self.mark_statement_changes = mark_statement_changes and self.tracked is not None
        self.server_id = server_id or endpoint.replication_server_id or random_server_id()
        self.heartbeat_s = heartbeat_s
        self.reconnect = reconnect
        self._buffer = ChangeBuffer(max_buffered_bytes)
        self._decoder = RowDecoder(self.tracked, compiled=compiled_decoding)
        self._tracker = PositionTracker(GtidSet())
        self.reconnects = 0
        self.bytes_read = 0
        """Binlog event bytes received (each decoded event's size without its header), over every read."""
        self.partial_transactions_discarded = 0
        self.idle_checks_failed = 0

    @property
    def position(self) -> GtidSet:
        """``start | {every transaction yielded}`` of the current or last read."""
        return self._tracker.value

    @property
    def peak_buffered_bytes(self) -> int:
        return self._buffer.peak_bytes

    def _settings(self) -> StreamSettings:
        tracked = self.tracked
        return StreamSettings(
            server_id=self.server_id,
            heartbeat_s=self.heartbeat_s,
            read_timeout_s=max(5, int(self.heartbeat_s * 4) + 1),
            only_schemas=frozenset(schema for schema, _ in tracked) if tracked else None,
            only_tables=frozenset(table for _, table in tracked) if tracked else None,
        )

    def read(self, start: GtidSet, stop: StopRule | None = None) -> Iterator[Transaction]:
        """Committed transactions not in ``start``, in binlog order, until ``stop`` says so."""
        stop = stop or Live()
        self._tracker = PositionTracker(start)
        control = ControlConnection(self.endpoint)
        holder = f"a BinlogReader in this process (started from {start or 'the beginning'})"
        with claim_server_id(self.endpoint, self.server_id, holder):
            try:
                control.check_settings(self.server_id)
                stop.begin(control, start)
                if stop.satisfied():
                    return
                yield from self._stream(self._handler(stop, control))
            finally:
                control.close()

    def _handler(self, stop: StopRule, control: ControlConnection) -> EventHandler:
        return EventHandler(
            stop=stop,
            tracker=self._tracker,
            rows=self._buffer,
            decoder=self._decoder,
            tracked=self.tracked,
            evolve_schema=self.evolve_schema,
            mark_statement_changes=self.mark_statement_changes,
            on_heartbeat=lambda: self._idle(stop, control),
        )

    # --- the fetch-and-reconnect loop -----------------------------------------------------------

    def _open(self) -> BinLogStreamReader:
        # Connecting is lazy: connection errors surface from the first fetchone().
        return open_stream(self.endpoint, self._tracker.value, self._settings())

    def _stream(self, handler: EventHandler) -> Iterator[Transaction]:
        """Fetch each event and hand it to ``handler``; on a lost connection reopen from the position.

        The library's own reconnect would resume from the position it was created with and re-send
        what we already yielded; :mod:`.stream` turns those errors into :class:`StreamInterrupted`,
        so every interruption lands here: the open transaction is dropped and read again whole from
        a new stream opened at ``position`` (module docstring, point 4).
        """
        attempts = 0
        stream = self._open()
        try:
            while True:
                try:
                    event = stream.fetchone()
                    if event is None:
                        raise StreamInterrupted(EOFError("the server ended the binlog stream"))
                    self.bytes_read += event.event_size
                except (StreamInterrupted, pymysql.err.OperationalError) as error:
                    cause = self._interruption_cause(error)
                    with suppress(Exception):
                        stream.close()
                    if handler.discard_open_transaction():
                        self.partial_transactions_discarded += 1
                    attempts += 1
                    if attempts > self.reconnect.max_attempts:
                        raise ConnectionLostError(
                            attempts=attempts - 1, position=self._tracker.value, last_error=cause
                        ) from error
                    self.reconnects += 1
                    time.sleep(self.reconnect.backoff_s(attempts))
                    stream = self._open()
                    continue
                except UNDECODABLE as error:
                    gtid = handler.open_gtid
                    raise UndecodableEventError(
                        error, gtid=str(gtid), position=self._tracker.value
                    ) from error
                for transaction in handler.handle(event, stream):
                    attempts = 0
                    yield transaction
                if handler.finished:
                    return
        finally:
            with suppress(Exception):  # never mask the error that ended the read
                stream.close()
            handler.discard_open_transaction()

    def _interruption_cause(self, error: StreamInterrupted | pymysql.err.OperationalError) -> BaseException:
        """Why the stream stopped, if reconnecting can help; raises the error it cannot help with."""
        if isinstance(error, StreamInterrupted):
            return error.cause
        code = error.args[0] if error.args else None
        if code == ER_SOURCE_FATAL_ERROR_READING_BINLOG:
            raise rejection_error(error, self._tracker.value, self.endpoint, self.server_id) from error
        if code not in RECONNECTABLE_ERROR_CODES:
            raise error
        return error

    def _idle(self, stop: StopRule, control: ControlConnection) -> None:
        try:
            stop.on_idle(control, self.position)
        except (pymysql.err.OperationalError, pymysql.err.InterfaceError):
            # The control connection failed (it reconnects on its next use): skip this idle check;
            # the next heartbeat repeats it, and a dead server also ends the dump connection.
            self.idle_checks_failed += 1
