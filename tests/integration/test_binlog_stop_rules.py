"""Each stop rule ends a read at a binlog prefix, also on an idle server."""

from __future__ import annotations

import threading
import time

import pytest

from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import (
    Live,
    TargetNotExecutedError,
    UntilCaughtUp,
    UntilCommitTimestamp,
    UntilGtidSet,
)
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.integration.test_binlog_reader import gtid_executed, read_all, table_name
from tests.support.mysql import execute, scalar

pytestmark = pytest.mark.mysql


def _server_now_us(endpoint: MySqlEndpoint) -> int:
    return int(scalar(endpoint, "SELECT UNIX_TIMESTAMP(NOW(6))") * 1_000_000)


def _insert(endpoint: MySqlEndpoint, *ids: int) -> None:
    for row_id in ids:
        execute(endpoint, f"INSERT INTO t VALUES ({row_id})")


@pytest.fixture
def table(mysql_database: MySqlEndpoint) -> str:
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)")
    return table_name(mysql_database, "t")


def test_until_gtid_set_stops_exactly_at_the_target(mysql_database: MySqlEndpoint, table: str):
    start = gtid_executed(mysql_database)
    _insert(mysql_database, 1, 2)
    target = gtid_executed(mysql_database)
    _insert(mysql_database, 3, 4)

    transactions, position = read_all(mysql_database, start, tables=[table], stop=UntilGtidSet(target))

    assert position == target
    assert [c.after["id"] for t in transactions for c in t.changes] == [1, 2]


def test_target_the_server_never_executed_is_refused(mysql_database: MySqlEndpoint, table: str):
    start = gtid_executed(mysql_database)
    foreign = GtidSet.parse("3e11fa47-71ca-11e1-9e33-c80aa9429562:1")
    with pytest.raises(TargetNotExecutedError, match="3e11fa47"):
        read_all(mysql_database, start, tables=[table], stop=UntilGtidSet(start | foreign))


def test_until_caught_up_stops_at_gtid_executed_read_when_the_read_started(
    mysql_database: MySqlEndpoint, table: str
):
    start = gtid_executed(mysql_database)
    _insert(mysql_database, 1, 2, 3)
    reader = BinlogReader(mysql_database, tables=[table], heartbeat_s=0.2)
    transactions = reader.read(start, UntilCaughtUp())
    first = next(transactions)  # the rule has read gtid_executed by now
    executed_at_start = gtid_executed(mysql_database)
    _insert(mysql_database, 4, 5)
    rest = list(transactions)

    assert [c.after["id"] for t in [first, *rest] for c in t.changes] == [1, 2, 3]
    assert reader.position == executed_at_start


def test_timestamp_boundary_consumes_a_prefix_and_stops_at_the_first_later_commit(
    mysql_database: MySqlEndpoint, table: str
):
    start = gtid_executed(mysql_database)
    _insert(mysql_database, 1, 2)
    time.sleep(0.05)
    boundary_us = _server_now_us(mysql_database)
    time.sleep(0.05)
    _insert(mysql_database, 3, 4)

    transactions, position = read_all(
        mysql_database, start, tables=[table], stop=UntilCommitTimestamp(boundary_us)
    )

    assert [c.after["id"] for t in transactions for c in t.changes] == [1, 2]
    assert all(t.commit_timestamp_us < boundary_us for t in transactions)
    assert (position - start).count() == 2


def test_timestamp_boundary_gives_the_same_end_set_every_time(mysql_database: MySqlEndpoint, table: str):
    start = gtid_executed(mysql_database)
    _insert(mysql_database, 1, 2, 3)
    boundary_us = _server_now_us(mysql_database)
    time.sleep(0.02)
    _insert(mysql_database, 4)
    ends = {
        read_all(mysql_database, start, tables=[table], stop=UntilCommitTimestamp(boundary_us))[1]
        for _ in range(3)
    }
    assert len(ends) == 1
    assert (ends.pop() - start).count() == 3


def test_timestamp_boundary_terminates_on_an_idle_server(mysql_database: MySqlEndpoint, table: str):
    start = gtid_executed(mysql_database)
    _insert(mysql_database, 1)
    boundary_us = _server_now_us(mysql_database) + 300_000  # in the future; nothing is written after
    began = time.monotonic()

    transactions, position = read_all(
        mysql_database, start, tables=[table], stop=UntilCommitTimestamp(boundary_us, settle_s=0.2)
    )

    assert time.monotonic() - began < 10
    assert position == gtid_executed(mysql_database)
    assert [c.after["id"] for t in transactions for c in t.changes] == [1]


class _CountingLive(Live):
    def __init__(self) -> None:
        self.idle_calls = 0

    def on_idle(self, probe, position: GtidSet) -> None:
        self.idle_calls += 1


def test_live_read_uses_heartbeats_while_idle_and_sees_new_transactions(
    mysql_database: MySqlEndpoint, table: str
):
    start = gtid_executed(mysql_database)
    rule = _CountingLive()
    writer = threading.Timer(1.2, _insert, args=(mysql_database, 7))
    writer.start()
    try:
        reader = BinlogReader(mysql_database, tables=[table], heartbeat_s=0.2)
        for transaction in reader.read(start, rule):
            assert [c.after for c in transaction.changes] == [{"id": 7}]
            break
    finally:
        writer.join()
    assert rule.idle_calls >= 3  # heartbeats arrived while nothing was written
    assert reader.position == gtid_executed(mysql_database)
