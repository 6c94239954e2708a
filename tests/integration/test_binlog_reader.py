"""The reader yields whole committed transactions and positions that resume exactly."""

from __future__ import annotations

import random
import time
from collections.abc import Iterable

import pytest
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent

from airflow_mysql_cdc.engine.binlog.changes import Op, Transaction
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import StopRule, UntilCaughtUp, UntilGtidSet
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.mysql import ServerPool, execute, scalar

pytestmark = pytest.mark.mysql


# --- helpers shared by the binlog test modules ------------------------------------------------


def gtid_executed(endpoint: MySqlEndpoint) -> GtidSet:
    return GtidSet.parse(scalar(endpoint, "SELECT @@GLOBAL.gtid_executed"))


def read_all(
    endpoint: MySqlEndpoint,
    start: GtidSet,
    *,
    tables: Iterable[str] | None = None,
    stop: StopRule | None = None,
    **options,
) -> tuple[list[Transaction], GtidSet]:
    reader = BinlogReader(endpoint, tables=tables, heartbeat_s=0.2, **options)
    transactions = list(reader.read(start, stop or UntilCaughtUp()))
    return transactions, reader.position


def row_images(transactions: Iterable[Transaction]) -> list[tuple]:
    """Everything a consumer applies, as comparable tuples in order."""
    return [
        (
            str(t.gtid),
            c.schema,
            c.table,
            c.op,
            c.primary_key,
            c.before and dict(c.before),
            c.after and dict(c.after),
        )
        for t in transactions
        for c in t.changes
    ]


def table_name(endpoint: MySqlEndpoint, table: str) -> str:
    return f"{endpoint.database}.{table}"


# --- reading ---------------------------------------------------------------------------------


def test_read_yields_whole_transactions_with_gtid_commit_time_and_row_images(mysql_database: MySqlEndpoint):
    execute(mysql_database, "CREATE TABLE t (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))")
    start = gtid_executed(mysql_database)
    before_us = int(time.time() * 1_000_000)
    execute(
        mysql_database,
        "BEGIN",
        "INSERT INTO t VALUES (1, 'x', 10), (2, 'y', 20)",
        "UPDATE t SET v = 11 WHERE a = 1",
        "DELETE FROM t WHERE a = 2",
        "COMMIT",
    )
    after_us = int(time.time() * 1_000_000)
    end = gtid_executed(mysql_database)

    transactions, position = read_all(mysql_database, start, tables=[table_name(mysql_database, "t")])

    assert len(transactions) == 1
    (transaction,) = transactions
    assert GtidSet.of([transaction.gtid]) == end - start
    assert before_us - 1_000_000 <= transaction.commit_timestamp_us <= after_us + 1_000_000
    changes = list(transaction.changes)
    assert [(c.op, c.primary_key) for c in changes] == [
        (Op.INSERT, (1, "x")),
        (Op.INSERT, (2, "y")),
        (Op.UPDATE, (1, "x")),
        (Op.DELETE, (2, "y")),
    ]
    assert changes[0].before is None and changes[0].after == {"a": 1, "b": "x", "v": 10}
    assert changes[2].before == {"a": 1, "b": "x", "v": 10} and changes[2].after == {
        "a": 1,
        "b": "x",
        "v": 11,
    }
    assert changes[3].before == {"a": 2, "b": "y", "v": 20} and changes[3].after is None
    assert {(c.schema, c.table) for c in changes} == {(mysql_database.database, "t")}
    assert changes[0].shape.primary_key == ("a", "b")
    assert position == end


def test_filtered_transactions_still_advance_the_position(mysql_database: MySqlEndpoint):
    execute(
        mysql_database, "CREATE TABLE tracked (id INT PRIMARY KEY)", "CREATE TABLE other (id INT PRIMARY KEY)"
    )
    start = gtid_executed(mysql_database)
    for i in range(5):
        execute(mysql_database, f"INSERT INTO other VALUES ({i})")
    execute(mysql_database, "INSERT INTO tracked VALUES (1)")
    for i in range(5, 8):
        execute(mysql_database, f"INSERT INTO other VALUES ({i})")
    end = gtid_executed(mysql_database)

    transactions, position = read_all(mysql_database, start, tables=[table_name(mysql_database, "tracked")])

    assert position == end
    assert GtidSet.of(t.gtid for t in transactions) == end - start
    assert [len(t.changes) for t in transactions] == [0] * 5 + [1] + [0] * 3
    assert [c.after for t in transactions for c in t.changes] == [{"id": 1}]


def _random_workload(endpoint: MySqlEndpoint, rng: random.Random, transactions: int) -> None:
    live: set[int] = set()
    next_id = 1
    with endpoint.connect() as connection, connection.cursor() as cursor:
        for _ in range(transactions):
            cursor.execute("BEGIN")
            for _ in range(rng.randint(1, 4)):
                roll = rng.random()
                if roll < 0.5 or not live:
                    cursor.execute("INSERT INTO t VALUES (%s, %s)", (next_id, rng.randint(0, 999)))
                    live.add(next_id)
                    next_id += 1
                elif roll < 0.8:
                    cursor.execute(
                        "UPDATE t SET v = %s WHERE id = %s", (rng.randint(0, 999), rng.choice(sorted(live)))
                    )
                else:
                    victim = rng.choice(sorted(live))
                    cursor.execute("DELETE FROM t WHERE id = %s", (victim,))
                    live.discard(victim)
            if rng.random() < 0.2:
                cursor.execute("INSERT INTO noise VALUES (%s)", (next_id,))
            cursor.execute("COMMIT")


def test_reading_in_random_segments_equals_one_full_read(mysql_database: MySqlEndpoint):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "CREATE TABLE noise (id INT)")
    start = gtid_executed(mysql_database)
    rng = random.Random(4)
    _random_workload(mysql_database, rng, 80)
    tables = [table_name(mysql_database, "t")]
    full, full_end = read_all(mysql_database, start, tables=tables)
    assert len(full) == 80

    for trial in range(4):
        position = start
        segments: list[Transaction] = []
        while position != full_end:
            reader = BinlogReader(mysql_database, tables=tables, heartbeat_s=0.2)
            if trial % 2:  # stop by breaking out of the generator after a random count
                take = rng.randint(1, 25)
                for transaction in reader.read(position, UntilCaughtUp()):
                    segments.append(transaction)
                    take -= 1
                    if take == 0:
                        break
            else:  # stop by a target set: a random prefix of the remaining transactions
                remaining = [t.gtid for t in full if t.gtid not in position]
                target = position | GtidSet.of(remaining[: rng.randint(1, 25)])
                segments.extend(reader.read(position, UntilGtidSet(target)))
                assert reader.position == target
            position = reader.position
        assert [t.gtid for t in segments] == [t.gtid for t in full]
        assert row_images(segments) == row_images(full)


def test_empty_start_reads_every_retained_transaction_on_a_fresh_server(mysql_servers: ServerPool):
    fresh = mysql_servers.start(name="binlog-empty-start").endpoint
    execute(
        fresh, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1), (2)"
    )
    execute(fresh, "FLUSH BINARY LOGS", "INSERT INTO d.t VALUES (3)")
    server_uuid = scalar(fresh, "SELECT @@server_uuid")
    executed = gtid_executed(fresh)
    assert executed == GtidSet.parse(f"{server_uuid}:1-4")

    # The trap: the library reads an empty auto_position as "no GTIDs: start in the current file",
    # so everything in earlier files (here the first three transactions) is silently skipped.
    bare = BinLogStreamReader(
        connection_settings=fresh.connection_kwargs(), server_id=777, auto_position="", blocking=False
    )
    try:
        assert [row["values"] for e in bare if isinstance(e, WriteRowsEvent) for row in e.rows] == [{"id": 3}]
    finally:
        bare.close()

    transactions, position = read_all(fresh, GtidSet(), tables=["d.t"])

    assert [str(t.gtid) for t in transactions] == [f"{server_uuid}:{n}" for n in (1, 2, 3, 4)]
    assert [c.after for t in transactions for c in t.changes] == [{"id": 1}, {"id": 2}, {"id": 3}]
    assert position == executed
