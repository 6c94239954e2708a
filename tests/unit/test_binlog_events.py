"""The reader's one event handler, driven with synthetic events: what each event means for a transaction."""

from __future__ import annotations

import uuid

import pytest
from pymysqlreplication.event import GtidEvent, NotImplementedEvent, QueryEvent, XidEvent
from pymysqlreplication.row_event import WriteRowsEvent

from airflow_mysql_cdc.engine.binlog import events as binlog_events
from airflow_mysql_cdc.engine.binlog import reader as binlog_reader
from airflow_mysql_cdc.engine.binlog.backpressure import ChangeBuffer
from airflow_mysql_cdc.engine.binlog.changes import SchemaChange, StatementChange, Transaction
from airflow_mysql_cdc.engine.binlog.errors import (
    SchemaChangeError,
    StatementBasedChangeError,
    UnexpectedEventError,
)
from airflow_mysql_cdc.engine.binlog.events import TRANSACTION_PAYLOAD_EVENT, EventHandler
from airflow_mysql_cdc.engine.binlog.position import PositionTracker
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import Live, StopRule, WithinGtidSet
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet

SERVER_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


# --- synthetic events -------------------------------------------------------------------------------


class _Packet:
    def __init__(self, commit_timestamp_us: int) -> None:
        self._tail = commit_timestamp_us.to_bytes(7, "little")
        self.flags = 0

    def read(self, size: int) -> bytes:
        return self._tail[:size]


def _event(cls: type, **attributes: object) -> object:
    event = object.__new__(cls)
    event.__dict__.update({"event_size": 16, **attributes})  # every decoded event has a size
    return event


def _gtid(number: int) -> GtidEvent:
    return _event(
        GtidEvent,
        sid=uuid.UUID(SERVER_UUID).bytes,
        gno=number,
        packet=_Packet(1_700_000_000_000_000 + number),
    )


def _query(statement: str, schema: str = "shop") -> QueryEvent:
    return _event(QueryEvent, query=statement, schema=schema.encode())


def _rows(*values: str) -> WriteRowsEvent:
    return _event(WriteRowsEvent, values=values)


def _xid() -> XidEvent:
    return _event(XidEvent)


def _payload(*inner: object) -> NotImplementedEvent:
    return _event(NotImplementedEvent, event_type=TRANSACTION_PAYLOAD_EVENT, inner=inner, packet=_Packet(0))


class _Decoder:
    """Rows events carry their decoded values; records what it was asked to decode."""

    def __init__(self) -> None:
        self.decoded: list[object] = []

    def decode(self, event: WriteRowsEvent, buffer: ChangeBuffer) -> None:
        self.decoded.append(event)
        buffer.add(list(event.values), 100)

    def check_table_map(self, event: object) -> None:
        pass


class _Executed:
    def __init__(self, executed: GtidSet) -> None:
        self.executed = executed

    def gtid_executed(self) -> GtidSet:
        return self.executed


class _Stream:
    table_map: dict[int, object] = {}


@pytest.fixture(autouse=True)
def _payloads_carry_their_events(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(binlog_events, "payload_events", lambda event, stream: iter(event.inner))


def _handler(
    *, start: GtidSet | None = None, stop: StopRule | None = None, evolve: bool = False, mark: bool = False
) -> EventHandler:
    return EventHandler(
        stop=stop or Live(),
        tracker=PositionTracker(start or GtidSet()),
        rows=ChangeBuffer(),
        decoder=_Decoder(),
        tracked=frozenset({("shop", "orders")}),
        evolve_schema=evolve,
        on_heartbeat=lambda: None,
        mark_statement_changes=mark,
    )


def _feed(handler: EventHandler, events: list[object]) -> list[Transaction]:
    committed: list[Transaction] = []
    for event in events:
        committed.extend(handler.handle(event, _Stream()))
        if handler.finished:
            break
    return committed


def _gtid_set(numbers: str) -> GtidSet:
    return GtidSet.parse(f"{SERVER_UUID}:{numbers}")


# --- the tests --------------------------------------------------------------------------------------


def test_rows_are_released_only_at_the_commit_marker():
    handler = _handler()

    before_commit = _feed(handler, [_gtid(1), _query("BEGIN"), _rows("a", "b"), _rows("c")])

    assert before_commit == []
    assert handler.tracker.value == GtidSet()
    assert handler.open is not None and handler.open.has_rows()
    (transaction,) = _feed(handler, [_xid()])
    assert transaction.gtid == Gtid(SERVER_UUID, 1)
    assert transaction.commit_timestamp_us == 1_700_000_000_000_001
    assert list(transaction.changes) == ["a", "b", "c"]
    assert handler.tracker.value == _gtid_set("1") and handler.open is None


def test_a_compressed_payload_gives_what_its_events_give_uncompressed():
    body = [_query("BEGIN"), _rows("a"), _rows("b", "c"), _xid()]
    plain, compressed = _handler(), _handler()
    seen: list[object] = []
    handle = compressed.handle

    def spy(event: object, stream: object):
        seen.append(event)
        return handle(event, stream)

    compressed.handle = spy  # the payload's events must come back through handle itself

    from_plain = _feed(plain, [_gtid(1), *body, _gtid(2), _query("BEGIN"), _rows("d"), _xid()])
    from_payload = _feed(
        compressed, [_gtid(1), _payload(*body), _gtid(2), _payload(_query("BEGIN"), _rows("d"), _xid())]
    )

    assert [(t.gtid, t.commit_timestamp_us, list(t.changes)) for t in from_payload] == [
        (t.gtid, t.commit_timestamp_us, list(t.changes)) for t in from_plain
    ]
    assert compressed.tracker.value == plain.tracker.value == _gtid_set("1-2")
    assert seen[2:6] == body  # after the GTID and the payload event itself


def test_a_payload_inside_a_payload_or_outside_a_transaction_is_refused():
    with pytest.raises(UnexpectedEventError, match="a compressed payload outside a transaction"):
        _feed(_handler(), [_payload(_query("BEGIN"), _xid())])
    with pytest.raises(UnexpectedEventError, match="a compressed payload outside a transaction"):
        _feed(_handler(), [_gtid(1), _payload(_query("BEGIN"), _payload(_xid()))])


def test_ddl_outside_a_body_is_its_own_transaction_with_its_schema_change():
    handler = _handler(evolve=True)

    (transaction,) = _feed(handler, [_gtid(1), _query("ALTER TABLE orders ADD note TEXT")])

    assert list(transaction.changes) == []
    assert transaction.schema_change == SchemaChange(
        "ALTER TABLE orders ADD note TEXT", "shop", ("shop.orders",)
    )
    assert handler.open is None and handler.tracker.value == _gtid_set("1")


def test_ddl_inside_a_body_stays_open_until_the_xid_and_keeps_its_rows():
    handler = _handler(evolve=True)

    (transaction,) = _feed(
        handler, [_gtid(1), _query("BEGIN"), _query("ALTER TABLE orders ADD note TEXT"), _rows("a"), _xid()]
    )

    assert list(transaction.changes) == ["a"]
    assert transaction.schema_change is not None and transaction.schema_change.tables == ("shop.orders",)


def test_ddl_on_a_tracked_table_without_evolve_stops_before_its_transaction():
    handler = _handler(start=_gtid_set("1"))

    with pytest.raises(SchemaChangeError) as raised:
        _feed(handler, [_gtid(2), _query("ALTER TABLE orders ADD note TEXT")])

    assert raised.value.gtid == f"{SERVER_UUID}:2"
    assert raised.value.position == _gtid_set("1")


def test_ddl_on_another_table_only_advances_the_position():
    (transaction,) = _feed(_handler(), [_gtid(1), _query("ALTER TABLE other ADD note TEXT")])

    assert transaction.schema_change is None and list(transaction.changes) == []


def test_a_statement_logged_change_of_a_tracked_table_inside_a_body_stops():
    with pytest.raises(StatementBasedChangeError):
        _feed(_handler(), [_gtid(1), _query("BEGIN"), _query("UPDATE orders SET total = 0"), _xid()])


def test_a_statement_logged_change_of_a_tracked_table_outside_a_body_stops_too():
    with pytest.raises(StatementBasedChangeError, match="shop.orders"):
        _feed(_handler(), [_gtid(1), _query("DELETE FROM orders")])


def test_a_marked_statement_change_rides_on_its_transaction_with_the_other_tables_rows():
    handler = _handler(mark=True)

    (committed,) = _feed(
        handler,
        [_gtid(1), _query("BEGIN"), _query("UPDATE orders SET total = 0"), _rows("other"), _xid()],
    )

    assert committed.statement_changes == (
        StatementChange("UPDATE orders SET total = 0", "shop", ("shop.orders",)),
    )
    assert list(committed.changes) == ["other"]
    assert handler.tracker.value == _gtid_set("1")


def test_a_statement_logged_change_of_another_table_is_neither_marked_nor_refused():
    (committed,) = _feed(
        _handler(), [_gtid(1), _query("BEGIN"), _query("UPDATE customers SET x = 0"), _xid()]
    )

    assert committed.statement_changes == ()


def test_a_transaction_already_in_the_position_is_neither_decoded_nor_yielded():
    handler = _handler(start=_gtid_set("1"))

    committed = _feed(
        handler, [_gtid(1), _query("BEGIN"), _query("UPDATE orders SET total = 0"), _rows("a"), _xid()]
    )

    assert committed == [] and handler.decoder.decoded == []
    assert handler.tracker.value == _gtid_set("1") and handler.open is None


def test_the_stop_rule_refuses_a_transaction_at_its_gtid():
    handler = _handler(stop=WithinGtidSet(_gtid_set("1-5")))
    handler.stop.begin(_Executed(_gtid_set("1-9")), GtidSet())

    committed = _feed(handler, [_gtid(1), _rows("a"), _xid(), _gtid(9), _rows("b"), _xid()])

    assert [t.gtid.number for t in committed] == [1]
    assert handler.finished and handler.open is None and handler.decoder.decoded[-1].values == ("a",)


def test_a_reconnect_inside_a_transaction_reads_it_again_whole():
    handler = _handler()
    _feed(handler, [_gtid(1), _query("BEGIN"), _rows("a"), _rows("b")])

    assert handler.discard_open_transaction() is True
    (transaction,) = _feed(handler, [_gtid(1), _query("BEGIN"), _rows("a"), _rows("b"), _xid()])

    assert list(transaction.changes) == ["a", "b"]
    assert handler.discard_open_transaction() is False


def test_a_commit_marker_outside_a_transaction_is_refused():
    with pytest.raises(UnexpectedEventError, match="a commit marker outside any transaction"):
        _feed(_handler(), [_xid()])


# --- through the reader: one handler per read ---------------------------------------------------------


class _FakeStream:
    def __init__(self, events: list[object]) -> None:
        self._events = list(events)
        self.table_map: dict[int, object] = {}

    def fetchone(self) -> object:
        return self._events.pop(0)

    def close(self) -> None:
        pass


class _FakeControl:
    def __init__(self, endpoint: object) -> None:
        pass

    def check_settings(self, server_id: int) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_read_abandoned_at_a_schema_change_leaves_nothing_for_the_next_read(monkeypatch):
    """The open transaction's schema change was an attribute of the reader and outlived an abandoned read."""
    scripted = [
        [_gtid(1), _query("ALTER TABLE orders ADD note TEXT")],
        [_gtid(2), _query("BEGIN"), _xid()],
    ]
    monkeypatch.setattr(binlog_reader, "open_stream", lambda *args: _FakeStream(scripted.pop(0)))
    monkeypatch.setattr(binlog_reader, "ControlConnection", _FakeControl)
    reader = BinlogReader(
        MySqlEndpoint("db.invalid"), server_id=21, tables=["shop.orders"], evolve_schema=True
    )

    for transaction in reader.read(GtidSet()):
        assert transaction.schema_change is not None
        break  # the consumer stops right after the schema change, as an applier may
    after = next(iter(reader.read(_gtid_set("1"))))

    assert after.gtid.number == 2 and after.schema_change is None
