"""Each measured hazard of mysql-replication 1.0.17 on MySQL 9.7 has a guard that holds."""

from __future__ import annotations

import threading

import pytest
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent

from airflow_mysql_cdc.engine.binlog.changes import Op
from airflow_mysql_cdc.engine.binlog.errors import (
    DuplicateServerIdError,
    TaggedGtidError,
    UnsupportedServerSettingError,
    XaTransactionError,
)
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import Live, UntilCaughtUp, UntilGtidSet
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.integration.test_binlog_reader import gtid_executed, read_all, table_name
from tests.support.mysql import ServerPool, execute, scalar

pytestmark = pytest.mark.mysql


def test_compressed_transactions_are_read_like_plain_ones(mysql_database: MySqlEndpoint):
    execute(
        mysql_database, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(100))", "CREATE TABLE other (id INT)"
    )
    start = gtid_executed(mysql_database)
    statements = [
        "INSERT INTO t VALUES (1, 'plain')",
        "BEGIN",
        "INSERT INTO other VALUES (1)",
        *(f"INSERT INTO t VALUES ({i}, REPEAT('{i % 10}', 100))" for i in range(2, 400)),
        "UPDATE t SET v = 'changed' WHERE id < 100",
        "DELETE FROM t WHERE id >= 300",
        "COMMIT",
        "INSERT INTO t VALUES (1000, 'small')",
    ]
    table = table_name(mysql_database, "t")
    execute(mysql_database, *statements)
    plain, plain_end = read_all(mysql_database, start, tables=[table])

    execute(mysql_database, "DELETE FROM t", "DELETE FROM other")
    compressed_start = gtid_executed(mysql_database)
    execute(mysql_database, "SET SESSION binlog_transaction_compression = ON", *statements)
    compressed, compressed_end = read_all(mysql_database, compressed_start, tables=[table])

    assert compressed_end == gtid_executed(mysql_database)
    assert [len(t.changes) for t in compressed] == [len(t.changes) for t in plain] == [1, 398 + 99 + 100, 1]
    images = [[(c.op, c.before, c.after) for c in t.changes] for t in compressed]
    assert images == [[(c.op, c.before, c.after) for c in t.changes] for t in plain]
    assert (compressed_end - compressed_start).count() == (plain_end - start).count() == 3


def test_partial_json_updates_are_never_dropped(mysql_database: MySqlEndpoint):
    """MySQL logs a diff only when it is smaller than the document: the small document arrives
    whole (an ordinary update), the large one as a diff (refused, never skipped)."""
    execute(
        mysql_database,
        "CREATE TABLE t (id INT PRIMARY KEY, doc JSON)",
        """INSERT INTO t VALUES (1, '{"a": 1}'), (2, JSON_OBJECT('a', 1, 'pad', REPEAT('p', 500)))""",
    )
    table = table_name(mysql_database, "t")
    start = gtid_executed(mysql_database)
    execute(
        mysql_database,
        "SET SESSION binlog_row_value_options = 'PARTIAL_JSON'",
        "UPDATE t SET doc = JSON_SET(doc, '$.a', 2) WHERE id = 1",
    )
    after_small = gtid_executed(mysql_database)
    execute(
        mysql_database,
        "SET SESSION binlog_row_value_options = 'PARTIAL_JSON'",
        "UPDATE t SET doc = JSON_SET(doc, '$.a', 2) WHERE id = 2",
    )

    small, _ = read_all(mysql_database, start, tables=[table], stop=UntilGtidSet(after_small))
    (change,) = [c for t in small for c in t.changes]
    assert change.op is Op.UPDATE
    assert (change.before, change.after) == ({"id": 1, "doc": '{"a":1}'}, {"id": 1, "doc": '{"a":2}'})

    with pytest.raises(UnsupportedServerSettingError, match="binlog_row_value_options is PARTIAL_JSON"):
        read_all(mysql_database, after_small, tables=[table])


def test_tagged_gtid_raises_unsupported(mysql_servers: ServerPool):
    server = mysql_servers.start(name="binlog-tagged-gtids").endpoint
    execute(server, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)")
    start = gtid_executed(server)
    execute(server, "INSERT INTO d.t VALUES (1)")
    before_tagged = gtid_executed(server)
    execute(
        server, "SET gtid_next = 'AUTOMATIC:etl'", "INSERT INTO d.t VALUES (2)", "SET gtid_next = 'AUTOMATIC'"
    )
    assert GtidSet.parse(scalar(server, "SELECT @@GLOBAL.gtid_executed")).has_tags

    reader = BinlogReader(server, tables=["d.t"], heartbeat_s=0.2)
    received = []
    with pytest.raises(TaggedGtidError, match="unsupported"):
        received.extend(reader.read(start, UntilCaughtUp()))
    assert [c.after for t in received for c in t.changes] == [{"id": 1}]
    assert reader.position == before_tagged


def test_non_transactional_commit_query_ends_the_transaction(mysql_database: MySqlEndpoint):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY) ENGINE = MyISAM")
    start = gtid_executed(mysql_database)
    execute(mysql_database, "INSERT INTO t VALUES (1), (2)", "INSERT INTO t VALUES (3)")
    transactions, position = read_all(mysql_database, start, tables=[table_name(mysql_database, "t")])
    assert [[c.after["id"] for c in t.changes] for t in transactions] == [[1, 2], [3]]
    assert position == gtid_executed(mysql_database)


def test_ddl_statement_is_its_own_committed_transaction(mysql_database: MySqlEndpoint):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)")
    start = gtid_executed(mysql_database)
    execute(mysql_database, "CREATE TABLE unrelated (id INT)", "INSERT INTO t VALUES (1)")
    transactions, _ = read_all(mysql_database, start, tables=[table_name(mysql_database, "t")])
    assert [len(t.changes) for t in transactions] == [0, 1]


def test_xa_prepare_on_a_tracked_table_is_rejected(mysql_database: MySqlEndpoint):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)")
    start = gtid_executed(mysql_database)
    execute(mysql_database, "XA START 'x1'", "INSERT INTO t VALUES (1)", "XA END 'x1'", "XA PREPARE 'x1'")
    execute(mysql_database, "XA COMMIT 'x1'")
    with pytest.raises(XaTransactionError, match="x1"):
        read_all(mysql_database, start, tables=[table_name(mysql_database, "t")])


def test_xa_one_phase_commit_and_xa_on_other_tables_are_read(mysql_database: MySqlEndpoint):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE other (id INT PRIMARY KEY)")
    start = gtid_executed(mysql_database)
    execute(
        mysql_database,
        "XA START 'one'",
        "INSERT INTO t VALUES (1)",
        "XA END 'one'",
        "XA COMMIT 'one' ONE PHASE",
    )
    execute(
        mysql_database, "XA START 'two'", "INSERT INTO other VALUES (1)", "XA END 'two'", "XA PREPARE 'two'"
    )
    execute(mysql_database, "XA COMMIT 'two'", "INSERT INTO t VALUES (2)")

    transactions, position = read_all(mysql_database, start, tables=[table_name(mysql_database, "t")])

    assert [[c.after["id"] for c in t.changes] for t in transactions] == [[1], [], [], [2]]
    assert position == gtid_executed(mysql_database)


def test_concurrent_readers_must_use_distinct_server_ids(mysql_database: MySqlEndpoint):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)")
    start = gtid_executed(mysql_database)
    execute(mysql_database, "INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (2)")
    tables = [table_name(mysql_database, "t")]

    first = BinlogReader(mysql_database, tables=tables, server_id=4_000_001, heartbeat_s=0.2)
    running = first.read(start, UntilCaughtUp())
    next(running)  # holds server_id 4000001 while open
    duplicate = BinlogReader(mysql_database, tables=tables, server_id=4_000_001, heartbeat_s=0.2)
    with pytest.raises(DuplicateServerIdError, match="4000001"):
        next(duplicate.read(start, UntilCaughtUp()))
    running.close()

    results: dict[int, list] = {}

    def read_with(server_id: int) -> None:
        reader = BinlogReader(mysql_database, tables=tables, server_id=server_id, heartbeat_s=0.2)
        results[server_id] = [t.gtid for t in reader.read(start, UntilCaughtUp())]

    threads = [threading.Thread(target=read_with, args=(server_id,)) for server_id in (4_000_002, 4_000_003)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results[4_000_002] == results[4_000_003] and len(results[4_000_002]) == 2

    source_id = int(scalar(mysql_database, "SELECT @@server_id"))
    with pytest.raises(DuplicateServerIdError, match="source server"):
        read_all(mysql_database, start, tables=tables, server_id=source_id)


def test_a_replica_with_our_server_id_neither_evicts_us_nor_is_evicted(mysql_database: MySqlEndpoint):
    """Measured on MySQL 9.7: the server evicts a dump whose server_id matches a new one only when
    neither sent a replica UUID (or both sent the same). Ours always send a fresh UUID."""
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)")
    start = gtid_executed(mysql_database)
    settings = mysql_database.connection_kwargs()
    settings.pop("database")
    other = BinLogStreamReader(
        connection_settings=settings, server_id=4_000_009, auto_position=str(start), blocking=True
    )
    reader = BinlogReader(
        mysql_database, tables=[table_name(mysql_database, "t")], server_id=4_000_009, heartbeat_s=0.2
    )
    try:
        other.fetchone()  # the other replica's dump is running
        writer = threading.Timer(0.5, execute, args=(mysql_database, "INSERT INTO t VALUES (1)"))
        writer.start()
        for transaction in reader.read(start, Live()):
            assert [c.after for c in transaction.changes] == [{"id": 1}]
            break
        writer.join()
        assert reader.reconnects == 0
        assert any(isinstance(event, WriteRowsEvent) for event in iter(other.fetchone, None))
    finally:
        other.close()


def test_readers_without_an_explicit_server_id_get_distinct_ones(mysql_database: MySqlEndpoint):
    ids = {BinlogReader(mysql_database).server_id for _ in range(50)}
    assert len(ids) == 50
    assert all(2**31 <= server_id < 2**32 for server_id in ids)


def test_table_ids_reused_after_a_restart_are_decoded_with_the_new_table(mysql_servers: ServerPool):
    """Measured: table ids restart with the server, so the first table used after each restart
    gets the same id; the library keeps its table maps across the file boundary."""
    name = "binlog-restarts"
    first = mysql_servers.start(name=name).endpoint
    execute(first, "CREATE DATABASE d", "CREATE TABLE d.a (id INT PRIMARY KEY, v INT)")
    execute(first, "CREATE TABLE d.b (id INT PRIMARY KEY, s VARCHAR(20))")
    mysql_servers.started[-1].stop()
    second = mysql_servers.start(name=name).endpoint
    start = gtid_executed(second)
    execute(second, "INSERT INTO d.a VALUES (1, 1)")  # the first table opened: id N
    mysql_servers.started[-1].stop()
    third = mysql_servers.start(name=name).endpoint
    execute(third, "INSERT INTO d.b VALUES (1, 'x')")  # the first table opened again: id N again

    transactions, _ = read_all(third, start, tables=["d.a", "d.b"])

    assert [(c.table, c.after) for t in transactions for c in t.changes] == [
        ("a", {"id": 1, "v": 1}),
        ("b", {"id": 1, "s": "x"}),
    ]
