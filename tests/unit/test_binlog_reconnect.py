"""The reader owns reconnection: it reopens from its own position and never yields a GTID twice."""

from __future__ import annotations

import uuid

import pytest
from pymysqlreplication.event import GtidEvent, XidEvent

from airflow_mysql_cdc.engine.binlog import reader as binlog_reader
from airflow_mysql_cdc.engine.binlog.errors import ConnectionLostError
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader, ReconnectPolicy
from airflow_mysql_cdc.engine.binlog.stop_rules import UntilGtidSet
from airflow_mysql_cdc.engine.binlog.stream import StreamInterrupted
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet

SERVER_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


class _Packet:
    def __init__(self, commit_timestamp_us: int) -> None:
        self._tail = commit_timestamp_us.to_bytes(7, "little")

    def read(self, size: int) -> bytes:
        return self._tail[:size]


GTID_EVENT_SIZE, XID_EVENT_SIZE = 42, 8
"""Sizes without the event header, as mysql-replication reports them (``event_size``)."""


def _gtid_event(number: int) -> GtidEvent:
    event = object.__new__(GtidEvent)
    event.sid = uuid.UUID(SERVER_UUID).bytes
    event.gno = number
    event.packet = _Packet(1_700_000_000_000_000 + number)
    event.event_size = GTID_EVENT_SIZE
    return event


def _xid_event() -> XidEvent:
    event = object.__new__(XidEvent)
    event.event_size = XID_EVENT_SIZE
    return event


def _transaction(number: int) -> list[object]:
    return [_gtid_event(number), _xid_event()]


class _FakeStream:
    def __init__(self, events: list[object]) -> None:
        self._events = list(events)

    def fetchone(self):
        item = self._events.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self) -> None:
        pass


class _FakeControl:
    def __init__(self, endpoint) -> None:
        pass

    def check_settings(self, server_id: int) -> None:
        pass

    def gtid_executed(self) -> GtidSet:
        return GtidSet.parse(f"{SERVER_UUID}:1-100")

    def now_us(self) -> int:
        return 0

    def close(self) -> None:
        pass


@pytest.fixture
def streams(monkeypatch: pytest.MonkeyPatch):
    """Scripted streams; records the position each one was opened from."""
    scripted: list[list[object]] = []
    opened_from: list[GtidSet] = []

    def open_stream(endpoint, position, settings):
        opened_from.append(position)
        return _FakeStream(scripted.pop(0))

    monkeypatch.setattr(binlog_reader, "open_stream", open_stream)
    monkeypatch.setattr(binlog_reader, "ControlConnection", _FakeControl)
    monkeypatch.setattr(binlog_reader.time, "sleep", lambda seconds: None)
    return scripted, opened_from


def test_reconnect_reopens_from_the_position_and_drops_resent_transactions(streams):
    scripted, opened_from = streams
    lost = StreamInterrupted(ConnectionError("dump thread killed"))
    # The first connection dies inside transaction 3; the second one re-sends 1 and 2, as
    # mysql-replication's own reconnect from its original auto_position does (upstream #367).
    scripted.append([*_transaction(1), *_transaction(2), _gtid_event(3), lost])
    scripted.append([*_transaction(1), *_transaction(2), *_transaction(3), *_transaction(4)])
    reader = BinlogReader(MySqlEndpoint("db.invalid"), server_id=12)

    numbers = [
        t.gtid.number for t in reader.read(GtidSet(), UntilGtidSet(GtidSet.parse(f"{SERVER_UUID}:1-4")))
    ]

    assert numbers == [1, 2, 3, 4]
    assert opened_from == [GtidSet(), GtidSet.parse(f"{SERVER_UUID}:1-2")]
    assert reader.reconnects == 1 and reader.partial_transactions_discarded == 1
    assert reader.position == GtidSet.parse(f"{SERVER_UUID}:1-4")
    # Every event received counts, the re-sent ones too: they crossed the network again.
    assert reader.bytes_read == 7 * GTID_EVENT_SIZE + 6 * XID_EVENT_SIZE


def test_reconnect_attempts_are_bounded_and_reset_by_progress(streams):
    scripted, _ = streams
    lost = StreamInterrupted(ConnectionError("gone"))
    scripted.append([*_transaction(1), lost])
    scripted.append([lost])
    scripted.append([*_transaction(2), lost])  # progress: the attempt count starts again
    scripted.append([lost])
    scripted.append([lost])
    reader = BinlogReader(
        MySqlEndpoint("db.invalid"), server_id=13, reconnect=ReconnectPolicy(max_attempts=2)
    )

    received = []
    with pytest.raises(ConnectionLostError) as raised:
        received.extend(reader.read(GtidSet(), UntilGtidSet(GtidSet.parse(f"{SERVER_UUID}:1-9"))))

    assert [t.gtid.number for t in received] == [1, 2]
    assert raised.value.attempts == 2
    assert raised.value.position == GtidSet.parse(f"{SERVER_UUID}:1-2")


def test_backoff_grows_exponentially_up_to_the_cap():
    policy = ReconnectPolicy(max_attempts=6, initial_backoff_s=0.5, max_backoff_s=3.0)
    assert [policy.backoff_s(attempt) for attempt in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
