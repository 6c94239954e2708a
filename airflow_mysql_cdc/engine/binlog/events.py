"""The reader's one event handler: what each binlog event means for the open transaction.

Invariant: every event of a read goes through :meth:`EventHandler.handle`, and so do the events
inside a compressed transaction payload, one by one, as if the transaction had been logged
uncompressed. So each rule of :mod:`.reader`'s module docstring is written once, here:

- a transaction is yielded only at its commit marker (``XidEvent``, ``COMMIT``, a statement outside a
  ``BEGIN`` body, ``XA COMMIT``/``XA_PREPARE``), after its GTID entered the position and the stop rule
  counted it; a transaction already in the position (re-sent after a reconnect) is checked for its
  shape but neither decoded nor yielded;
- the handler sets :attr:`EventHandler.finished` exactly where a read ends: at a GTID the stop rule
  refuses (that transaction stays unread), or when the rule is satisfied after a commit or an idle
  check (a heartbeat or any event the library does not parse);
- an event that cannot be placed in a transaction, or whose rows cannot be known, raises a
  :mod:`.errors` exception before anything of its transaction is yielded; except, when the reader
  is asked to, DDL on a tracked table (a :class:`~.changes.SchemaChange`) and a statement-logged
  data change of one (``INSERT``/``UPDATE``/``DELETE``/``REPLACE``/``LOAD DATA`` logged as a
  statement, a :class:`~.changes.StatementChange`), which mark their transaction for the applier to
  decide; the rows of the transaction's other tables are read as usual.

What spans the events of one transaction is an :class:`~.transaction.OpenTransaction`; the handler
replaces it at a GTID and clears it at the commit marker. Fetching events and reconnecting is the
loop's job (:meth:`.reader.BinlogReader.read`), which calls the handler once per fetched event: the
shape of go-mysql's canal (``runSyncBinlog`` fetches, ``handleEvent`` switches on the event type and
feeds a ``TransactionPayloadEvent``'s events back into itself).

Guarded by the unit tests in ``tests/unit/test_binlog_events.py`` (rows released only at the commit
marker, a compressed payload giving what its uncompressed events give, DDL inside and outside a body)
and, on a real server, ``test_compressed_transactions_are_read_like_plain_ones``,
``test_ddl_on_tracked_table_stops_before_anything_after_it`` and
``test_reading_in_random_segments_equals_one_full_read``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import (
    ExecuteLoadQueryEvent,
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

from airflow_mysql_cdc.engine.binlog.backpressure import ChangeBuffer
from airflow_mysql_cdc.engine.binlog.changes import SchemaChange, StatementChange, Transaction
from airflow_mysql_cdc.engine.binlog.compressed_payload import PayloadDecodingError, payload_events
from airflow_mysql_cdc.engine.binlog.decoding.rows import RowDecoder
from airflow_mysql_cdc.engine.binlog.errors import (
    BinlogReaderError,
    CompressedTransactionError,
    SchemaChangeError,
    StatementBasedChangeError,
    TaggedGtidError,
    UndecodableEventError,
    UnexpectedEventError,
    XaTransactionError,
)
from airflow_mysql_cdc.engine.binlog.internals import load_query_statement
from airflow_mysql_cdc.engine.binlog.position import PositionTracker
from airflow_mysql_cdc.engine.binlog.statements import (
    StatementKind,
    affected_tracked_tables,
    classify,
    statement_tracked_tables,
)
from airflow_mysql_cdc.engine.binlog.stop_rules import StopRule
from airflow_mysql_cdc.engine.binlog.transaction import OpenTransaction
from airflow_mysql_cdc.engine.values.gtid import Gtid

TRANSACTION_PAYLOAD_EVENT = 40
HEARTBEAT_LOG_EVENT_V2 = 41
GTID_TAGGED_LOG_EVENT = 42
ANONYMOUS_GTID_LOG_EVENT = 34
# Events that carry nothing a row-based change stream needs: INTVAR, RAND, USER_VAR (statement
# context), IGNORABLE, ROWS_QUERY, TRANSACTION_CONTEXT, VIEW_CHANGE (group replication).
_HARMLESS_UNPARSED_EVENTS = frozenset({5, 13, 14, 28, 29, 36, 37})
_LOG_EVENT_IGNORABLE_F = 0x80
_COMMIT_TIMESTAMP_MASK = (1 << 55) - 1
UNDECODABLE = (StatusVariableMismatch, MalformedBinLogEvent, NotImplementedError)
"""What mysql-replication raises for an event it cannot decode (an :class:`UndecodableEventError`)."""


def commit_timestamp_us(event: GtidEvent) -> int:
    """The immediate commit timestamp that follows the fields mysql-replication parses.

    The library stops after ``sequence_number``; the next 7 bytes are the immediate commit
    timestamp in microseconds (bit 55 flags that an original commit timestamp follows).
    """
    raw = event.packet.read(7)
    return int.from_bytes(raw, "little") & _COMMIT_TIMESTAMP_MASK


class EventHandler:
    """Handles the events of one read (see the module docstring); a new one for every read.

    ``tracked`` are the ``(schema, table)`` pairs whose rows are read (None: every table);
    ``evolve_schema`` yields DDL on them instead of raising; ``mark_statement_changes`` yields a
    statement-logged data change of them as a :class:`~.changes.StatementChange` on its transaction
    instead of raising; ``on_heartbeat`` runs the stop rule's idle check.
    """

    def __init__(
        self,
        *,
        stop: StopRule,
        tracker: PositionTracker,
        rows: ChangeBuffer,
        decoder: RowDecoder,
        tracked: Collection[tuple[str, str]] | None,
        evolve_schema: bool,
        on_heartbeat: Callable[[], None],
        mark_statement_changes: bool = False,
    ) -> None:
        self.stop = stop
        self.tracker = tracker
        self.rows = rows
        self.decoder = decoder
        self.tracked = tracked
        self.evolve_schema = evolve_schema
        self.mark_statement_changes = mark_statement_changes
        self.on_heartbeat = on_heartbeat
        self.open: OpenTransaction | None = None
        self.finished = False  # the read ends here (see the module docstring)
        self._in_payload = False

    @property
    def open_gtid(self) -> Gtid | None:
        return self.open.gtid if self.open is not None else None

    def discard_open_transaction(self) -> bool:
        """Drop the open transaction, if any (the connection was lost); True if there was one."""
        had_one, self.open = self.open is not None, None
        self.rows.discard()  # the open transaction is incomplete: it will be re-sent whole
        return had_one

    def handle(self, event: object, stream: BinLogStreamReader) -> Iterable[Transaction]:
        """Apply one event; returns the transactions it commits.

        None or one, except for a compressed payload: then those its events commit, produced lazily
        as its events are handled, so a consumer gets each before the next event is read (a plain
        function rather than a generator: most events commit nothing, and this runs for each).
        """
        if isinstance(event, RowsEvent):
            self._rows(event)
        elif isinstance(event, GtidEvent):
            self._gtid(event)
        elif isinstance(event, XidEvent):
            return self._commit(event)
        elif isinstance(event, QueryEvent):
            if self._query(event):
                return self._commit(event)
        elif isinstance(event, ExecuteLoadQueryEvent):
            if self._load_query(event):
                return self._commit(event)
        elif isinstance(event, XAPrepareEvent):
            self._xa_prepare(event)
            return self._commit(event)
        elif isinstance(event, HeartbeatLogEvent):
            self._idle()
        elif isinstance(event, NotImplementedEvent):
            if event.event_type == TRANSACTION_PAYLOAD_EVENT:
                return self._payload(event, stream)
            self._unparsed(event)
        elif isinstance(event, (RotateEvent, FormatDescriptionEvent, PreviousGtidsEvent)):
            self._new_file(event, stream)
        elif isinstance(event, TableMapEvent):
            self.decoder.check_table_map(event)
        return ()

    # --- one method per kind of event -----------------------------------------------------------

    def _rows(self, event: RowsEvent) -> None:
        transaction = self.open
        if transaction is None:
            raise self._unexpected(event, "a rows event outside any transaction")
        if transaction.already_read:
            return
        try:
            self.decoder.decode(event, transaction.rows)
        except UNDECODABLE as error:
            raise UndecodableEventError(
                error, gtid=str(transaction.gtid), position=self.tracker.value
            ) from error

    def _gtid(self, event: GtidEvent) -> None:
        if self.open is not None:
            raise self._unexpected(event, f"a new GTID before transaction {self.open.gtid} committed")
        timestamp_us = commit_timestamp_us(event)
        gtid = Gtid(event.gtid.rpartition(":")[0], event.gno)
        already_read = gtid in self.tracker
        if not already_read and self.stop.stop_before(gtid, timestamp_us):
            self.finished = True
            return
        self.open = OpenTransaction(gtid, timestamp_us, already_read=already_read, rows=self.rows)

    def _commit(self, event: object) -> tuple[Transaction, ...]:
        """The open transaction, whole, unless it was read already; the stop rule is asked after it.

        Asked before the consumer gets the transaction rather than after: only ``consumed`` and
        ``on_idle`` change what a rule says, and neither runs in between.
        """
        transaction = self.open
        if transaction is None:
            raise self._unexpected(event, "a commit marker outside any transaction")
        committed = transaction.close()
        self.open = None
        if not transaction.already_read:
            self.tracker.add(transaction.gtid)
            self.stop.consumed(transaction.gtid)
        if self.stop.satisfied():
            self.finished = True
        return () if transaction.already_read else (committed,)

    def _query(self, event: QueryEvent) -> bool:
        """Whether this statement is the open transaction's commit marker."""
        statement = event.query
        kind = classify(statement)
        transaction = self.open
        if transaction is None:
            raise self._unexpected(event, f"statement {statement[:80]!r} outside any transaction")
        if kind in (StatementKind.BEGIN, StatementKind.XA_OPEN):
            transaction.enter_body()
            return False
        if kind in (StatementKind.COMMIT, StatementKind.ROLLBACK, StatementKind.XA_FINISH):
            return True
        if kind is StatementKind.SAVEPOINT:
            return False
        schema = event.schema.decode() if isinstance(event.schema, bytes) else str(event.schema)
        if not transaction.already_read:
            self._check_statement(transaction, kind, statement, schema)
        return transaction.statement_commits()

    def _load_query(self, event: ExecuteLoadQueryEvent) -> bool:
        """A statement-logged ``LOAD DATA``: a data change like any other statement; whether it commits."""
        transaction = self.open
        if transaction is None:
            raise self._unexpected(event, "a LOAD DATA statement outside any transaction")
        if not transaction.already_read:
            schema, statement = load_query_statement(event)
            self._check_statement(transaction, StatementKind.DATA_CHANGE, statement, schema)
        return transaction.statement_commits()

    def _check_statement(
        self, transaction: OpenTransaction, kind: StatementKind, statement: str, schema: str
    ) -> None:
        """DDL on a tracked table: evolve or stop; a statement-logged data change of one: mark or stop."""
        if kind is StatementKind.SCHEMA_CHANGE:
            tables = affected_tracked_tables(statement, schema, self.tracked)
            if tables and self.evolve_schema:
                transaction.evolve(SchemaChange(statement, schema, tables))
            elif tables:
                raise SchemaChangeError(
                    gtid=str(transaction.gtid),
                    statement=statement,
                    schema=schema,
                    tables=tables,
                    position=self.tracker.value,
                )
        elif kind is StatementKind.DATA_CHANGE:
            tables = statement_tracked_tables(statement, schema, self.tracked)
            if tables and self.mark_statement_changes:
                transaction.changed_by_statement(StatementChange(statement, schema, tables))
            elif tables:
                raise StatementBasedChangeError(
                    gtid=str(transaction.gtid),
                    statement=statement,
                    schema=schema,
                    tables=tables,
                    position=self.tracker.value,
                )

    def _xa_prepare(self, event: XAPrepareEvent) -> None:
        """Refuse a two-phase XA transaction with tracked rows: its commit is another GTID."""
        transaction = self.open
        if transaction is None or transaction.already_read:
            return  # outside a transaction the commit marker check refuses it
        if not event.one_phase and transaction.has_rows():
            raise XaTransactionError(
                gtid=str(transaction.gtid), xid=repr(event.xid), position=self.tracker.value
            )

    def _payload(self, event: NotImplementedEvent, stream: BinLogStreamReader) -> Iterator[Transaction]:
        """A compressed transaction: its events, through :meth:`handle` like any others."""
        if self.open is None or self._in_payload:
            raise self._unexpected(event, "a compressed payload outside a transaction")
        return self._handle_all(self._unpacked(event, stream, self.open.gtid), stream)

    def _handle_all(
        self, inner_events: Iterator[object], stream: BinLogStreamReader
    ) -> Iterator[Transaction]:
        self._in_payload = True
        try:
            for inner in inner_events:
                yield from self.handle(inner, stream)
                if self.finished:
                    return
        finally:
            self._in_payload = False

    def _unpacked(
        self, event: NotImplementedEvent, stream: BinLogStreamReader, gtid: Gtid
    ) -> Iterator[object]:
        """The events of a compressed transaction, decoding errors turned into a typed error."""
        try:
            yield from payload_events(event, stream)
        except (PayloadDecodingError, ImportError, StatusVariableMismatch, MalformedBinLogEvent) as error:
            raise CompressedTransactionError(
                gtid=str(gtid), position=self.tracker.value, cause=error
            ) from error

    def _unparsed(self, event: NotImplementedEvent) -> None:
        event_type = event.event_type
        if event_type == HEARTBEAT_LOG_EVENT_V2:
            self.on_heartbeat()
        elif event_type == GTID_TAGGED_LOG_EVENT:
            raise TaggedGtidError(position=self.tracker.value)
        elif event_type == ANONYMOUS_GTID_LOG_EVENT:
            raise self._unexpected(event, "an anonymous (GTID-less) transaction; set gtid_mode=ON")
        elif event_type not in _HARMLESS_UNPARSED_EVENTS and not event.packet.flags & _LOG_EVENT_IGNORABLE_F:
            raise self._unexpected(event, f"binlog event type {event_type}, which this reader does not know")
        if self.stop.satisfied():
            self.finished = True

    def _idle(self) -> None:
        self.on_heartbeat()
        if self.stop.satisfied():
            self.finished = True

    def _new_file(self, event: object, stream: BinLogStreamReader) -> None:
        if self.open is not None and not isinstance(event, RotateEvent):
            raise self._unexpected(event, f"a new binlog file inside transaction {self.open.gtid}")
        if isinstance(event, FormatDescriptionEvent):
            # Every binlog file starts with one. Table ids restart after a server restart, and the
            # library forgets its table maps only on a *timestamped* rotate, which a file ending in a
            # restart lacks: with freeze_schema it would decode a new table's rows with the old table's
            # definition under the reused id. Guarded by
            # test_table_ids_reused_after_a_restart_are_decoded_with_the_new_table.
            stream.table_map.clear()

    def _unexpected(self, event: object, what: str) -> BinlogReaderError:
        return UnexpectedEventError(
            f"the binlog stream contained {what} ({type(event).__name__}); stopping rather than risking a "
            "silent gap. Report this with the server version and the binlog file and position.",
            position=self.tracker.value,
        )
