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
   tracked table, and DDL on a tracked table unless ``schema_changes="evolve"``) raises a
   :mod:`.errors` exception *before* that transaction is yielded. With ``"evolve"`` a DDL statement
   that may change a tracked table is yielded as its own transaction, with no rows and its
   :class:`~.changes.SchemaChange`: rows after it arrive with their new table map (a new table id),
   so they are decoded with the new definition;
6. rows are decoded with the table map of their own binlog file: compressed payloads are unpacked
   into ordinary events, and the library's table maps are dropped at the start of every file,
   because table ids restart with the server
   (``test_table_ids_reused_after_a_restart_are_decoded_with_the_new_table``).

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
from pymysqlreplication.event import (
    FormatDescriptionEvent,
    GtidEvent,
    HeartbeatLogEvent,
    NotImplementedEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RotateEvent,
    XAPrepareEvent,
    XidEvent,
)
from pymysqlreplication.exceptions import MalformedBinLogEvent, StatusVariableMismatch
from pymysqlreplication.row_event import RowsEvent, TableMapEvent

from airflow_mysql_cdc.engine.binlog.backpressure import DEFAULT_MAX_BUFFERED_BYTES, ChangeBuffer
from airflow_mysql_cdc.engine.binlog.changes import SchemaChange, Transaction
from airflow_mysql_cdc.engine.binlog.compressed_payload import PayloadDecodingError, payload_events
from airflow_mysql_cdc.engine.binlog.decoding.rows import RowDecoder
from airflow_mysql_cdc.engine.binlog.errors import (
    BinlogReaderError,
    CompressedTransactionError,
    ConnectionLostError,
    SchemaChangeError,
    StatementBasedChangeError,
    TaggedGtidError,
    UndecodableEventError,
    UnexpectedEventError,
    XaTransactionError,
)
from airflow_mysql_cdc.engine.binlog.position import PositionTracker
from airflow_mysql_cdc.engine.binlog.statements import (
    SCHEMA_CHANGE_MODES,
    SchemaChangeMode,
    StatementKind,
    affected_tracked_tables,
    classify,
    mentions_tracked_table,
)
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
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet

TRANSACTION_PAYLOAD_EVENT = 40
HEARTBEAT_LOG_EVENT_V2 = 41
GTID_TAGGED_LOG_EVENT = 42
ANONYMOUS_GTID_LOG_EVENT = 34
# Events that carry nothing a row-based change stream needs: INTVAR, RAND, USER_VAR (statement
# context), IGNORABLE, ROWS_QUERY, TRANSACTION_CONTEXT, VIEW_CHANGE (group replication).
_HARMLESS_UNPARSED_EVENTS = frozenset({5, 13, 14, 28, 29, 36, 37})
_LOG_EVENT_IGNORABLE_F = 0x80
_COMMIT_TIMESTAMP_MASK = (1 << 55) - 1


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


def commit_timestamp_us(event: GtidEvent) -> int:
    """The immediate commit timestamp that follows the fields mysql-replication parses.

    The library stops after ``sequence_number``; the next 7 bytes are the immediate commit
    timestamp in microseconds (bit 55 flags that an original commit timestamp follows).
    """
    raw = event.packet.read(7)
    return int.from_bytes(raw, "little") & _COMMIT_TIMESTAMP_MASK


class BinlogReader:
    """Reads one server's binlog; one ``read`` at a time per reader object.

    ``tables`` are ``"schema.table"`` names whose rows are decoded and yielded (None: every table).
    Transactions on other tables are still yielded, with no changes, so the position advances.
    ``schema_changes`` says what DDL on a tracked table does: ``"stop"`` raises
    :class:`~.errors.SchemaChangeError` before it, ``"evolve"`` yields it (module docstring, point 5;
    it needs named ``tables``).
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
        schema_changes: SchemaChangeMode = "stop",
    ) -> None:
        if schema_changes not in SCHEMA_CHANGE_MODES:
            raise ValueError(f"schema_changes must be one of {SCHEMA_CHANGE_MODES}, not {schema_changes!r}")
        self.endpoint = endpoint
        self.tracked = _parse_tracked(tables)
        self.evolve_schema = schema_changes == "evolve" and self.tracked is not None
        self._schema_change: SchemaChange | None = None  # of the open transaction
        self.server_id = server_id or endpoint.replication_server_id or random_server_id()
        self.heartbeat_s = heartbeat_s
        self.reconnect = reconnect
        self._buffer = ChangeBuffer(max_buffered_bytes)
        self._decoder = RowDecoder(self.tracked, compiled=compiled_decoding)
        self._tracker = PositionTracker(GtidSet())
        self.reconnects = 0
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
                yield from self._stream(stop, control)
            finally:
                control.close()

    # --- the event loop -------------------------------------------------------------------------

    def _open(self) -> BinLogStreamReader:
        # Connecting is lazy: connection errors surface from the first fetchone().
        return open_stream(self.endpoint, self._tracker.value, self._settings())

    def _stream(self, stop: StopRule, control: ControlConnection) -> Iterator[Transaction]:
        tracker = self._tracker
        buffer = self._buffer
        decoder = self._decoder
        attempts = 0
        stream = self._open()
        gtid: Gtid | None = None  # the open transaction, None between transactions
        skipping = False  # the open transaction is already in the position (re-sent)
        timestamp_us = 0
        in_body = False  # after BEGIN / XA START
        unpacked: Iterator[object] | None = None  # events of a compressed transaction payload
        try:
            while True:
                if unpacked is not None:
                    event = next(unpacked, None)
                    if event is None:
                        unpacked = None
                        continue
                else:
                    event = None
                try:
                    if event is None:
                        event = stream.fetchone()
                    if event is None:
                        raise StreamInterrupted(EOFError("the server ended the binlog stream"))
                except (StreamInterrupted, pymysql.err.OperationalError) as error:
                    if isinstance(error, pymysql.err.OperationalError):
                        code = error.args[0] if error.args else None
                        if code == ER_SOURCE_FATAL_ERROR_READING_BINLOG:
                            raise rejection_error(
                                error, tracker.value, self.endpoint, self.server_id
                            ) from error
                        if code not in RECONNECTABLE_ERROR_CODES:
                            raise
                    cause = error.cause if isinstance(error, StreamInterrupted) else error
                    with suppress(Exception):
                        stream.close()
                    if gtid is not None:
                        self.partial_transactions_discarded += 1
                    buffer.discard()  # the open transaction is incomplete: it will be re-sent whole
                    gtid, skipping, in_body, unpacked = None, False, False, None
                    self._schema_change = None
                    attempts += 1
                    if attempts > self.reconnect.max_attempts:
                        raise ConnectionLostError(
                            attempts=attempts - 1, position=tracker.value, last_error=cause
                        ) from error
                    self.reconnects += 1
                    time.sleep(self.reconnect.backoff_s(attempts))
                    stream = self._open()
                    continue
                except (StatusVariableMismatch, MalformedBinLogEvent, NotImplementedError) as error:
                    raise UndecodableEventError(error, gtid=str(gtid), position=tracker.value) from error

                if isinstance(event, RowsEvent):
                    if gtid is None:
                        raise self._unexpected(event, "a rows event outside any transaction")
                    if not skipping:
                        try:
                            decoder.decode(event, buffer)
                        except (StatusVariableMismatch, MalformedBinLogEvent, NotImplementedError) as error:
                            raise UndecodableEventError(
                                error, gtid=str(gtid), position=tracker.value
                            ) from error
                    continue
                if isinstance(event, GtidEvent):
                    if gtid is not None:
                        raise self._unexpected(event, f"a new GTID before transaction {gtid} committed")
                    timestamp_us = commit_timestamp_us(event)
                    gtid = Gtid(event.gtid.rpartition(":")[0], event.gno)
                    skipping = gtid in tracker
                    if not skipping and stop.stop_before(gtid, timestamp_us):
                        return
                    in_body = False
                    continue
                commit = False
                if isinstance(event, XidEvent):
                    commit = True
                elif isinstance(event, QueryEvent):
                    commit, in_body = self._on_query(event, gtid, in_body, skipping)
                elif isinstance(event, XAPrepareEvent):
                    if not skipping and not event.one_phase and buffer.has_changes():
                        raise XaTransactionError(gtid=str(gtid), xid=repr(event.xid), position=tracker.value)
                    commit = True
                elif isinstance(event, HeartbeatLogEvent):
                    self._idle(stop, control)
                    if stop.satisfied():
                        return
                elif isinstance(event, NotImplementedEvent):
                    if event.event_type == TRANSACTION_PAYLOAD_EVENT:
                        if gtid is None or unpacked is not None:
                            raise self._unexpected(event, "a compressed payload outside a transaction")
                        unpacked = self._unpack(event, stream, gtid)
                        continue
                    self._on_unparsed(event, gtid, control, stop)
                    if stop.satisfied():
                        return
                elif isinstance(event, (RotateEvent, FormatDescriptionEvent, PreviousGtidsEvent)):
                    if gtid is not None and not isinstance(event, RotateEvent):
                        raise self._unexpected(event, f"a new binlog file inside transaction {gtid}")
                    if isinstance(event, FormatDescriptionEvent):
                        # Every binlog file starts with one. Table ids restart after a server restart,
                        # and the library forgets its table maps only on a *timestamped* rotate, which
                        # a file ending in a restart lacks: with freeze_schema it would decode a new
                        # table's rows with the old table's definition under the reused id. Guarded by
                        # test_table_ids_reused_after_a_restart_are_decoded_with_the_new_table.
                        stream.table_map.clear()
                elif isinstance(event, TableMapEvent):
                    decoder.check_table_map(event)
                if not commit:
                    continue
                if gtid is None:
                    raise self._unexpected(event, "a commit marker outside any transaction")
                changes = buffer.finish()
                if not skipping:
                    tracker.add(gtid)
                    stop.consumed(gtid)
                    attempts = 0
                    yield Transaction(gtid, timestamp_us, changes, self._schema_change)
                gtid, skipping, in_body = None, False, False
                self._schema_change = None
                if stop.satisfied():
                    return
        finally:
            with suppress(Exception):  # never mask the error that ended the read
                stream.close()
            buffer.discard()

    def _on_query(
        self, event: QueryEvent, gtid: Gtid | None, in_body: bool, skipping: bool
    ) -> tuple[bool, bool]:
        """(is this the commit marker, are we inside a BEGIN/XA START body) after a query event."""
        statement = event.query
        kind = classify(statement)
        if gtid is None:
            raise self._unexpected(event, f"statement {statement[:80]!r} outside any transaction")
        if kind in (StatementKind.BEGIN, StatementKind.XA_OPEN):
            return False, True
        if kind in (StatementKind.COMMIT, StatementKind.ROLLBACK, StatementKind.XA_FINISH):
            return True, False
        if kind is StatementKind.SAVEPOINT:
            return False, in_body
        schema = event.schema.decode() if isinstance(event.schema, bytes) else str(event.schema)
        if skipping:
            return not in_body, in_body
        if kind is StatementKind.SCHEMA_CHANGE:
            tables = affected_tracked_tables(statement, schema, self.tracked)
            if tables and self.evolve_schema:
                self._schema_change = SchemaChange(statement, schema, tables)
            elif tables:
                raise SchemaChangeError(
                    gtid=str(gtid), statement=statement, schema=schema, tables=tables, position=self.position
                )
        elif (
            in_body
            and kind is StatementKind.DATA_CHANGE
            and mentions_tracked_table(statement, schema, self.tracked)
        ):
            raise StatementBasedChangeError(gtid=str(gtid), statement=statement, position=self.position)
        # Outside a BEGIN body a statement is its own transaction (DDL): it is the commit marker.
        return not in_body, in_body

    def _unpack(self, event: NotImplementedEvent, stream: BinLogStreamReader, gtid: Gtid) -> Iterator[object]:
        """The events of a compressed transaction, decoding errors turned into a typed error."""
        try:
            yield from payload_events(event, stream)
        except (PayloadDecodingError, ImportError, StatusVariableMismatch, MalformedBinLogEvent) as error:
            raise CompressedTransactionError(gtid=str(gtid), position=self.position, cause=error) from error

    def _on_unparsed(self, event: NotImplementedEvent, gtid: Gtid | None, control, stop: StopRule) -> None:
        event_type = event.event_type
        if event_type == HEARTBEAT_LOG_EVENT_V2:
            self._idle(stop, control)
        elif event_type == GTID_TAGGED_LOG_EVENT:
            raise TaggedGtidError(position=self.position)
        elif event_type == ANONYMOUS_GTID_LOG_EVENT:
            raise self._unexpected(event, "an anonymous (GTID-less) transaction; set gtid_mode=ON")
        elif event_type not in _HARMLESS_UNPARSED_EVENTS and not event.packet.flags & _LOG_EVENT_IGNORABLE_F:
            raise self._unexpected(event, f"binlog event type {event_type}, which this reader does not know")

    def _idle(self, stop: StopRule, control: ControlConnection) -> None:
        try:
            stop.on_idle(control, self.position)
        except (pymysql.err.OperationalError, pymysql.err.InterfaceError):
            # The control connection failed (it reconnects on its next use): skip this idle check;
            # the next heartbeat repeats it, and a dead server also ends the dump connection.
            self.idle_checks_failed += 1

    def _unexpected(self, event: object, what: str) -> BinlogReaderError:
        return UnexpectedEventError(
            f"the binlog stream contained {what} ({type(event).__name__}); stopping rather than risking a "
            "silent gap. Report this with the server version and the binlog file and position.",
            position=self.position,
        )
