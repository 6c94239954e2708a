"""Failures end a read with a typed error at a safe position, or are survived without loss."""

from __future__ import annotations

import pymysql
import pytest

from airflow_mysql_cdc.engine.binlog.errors import (
    BinlogPurgedError,
    ConnectionLostError,
    SchemaChangeError,
    StatementBasedChangeError,
    UnsupportedServerSettingError,
)
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader, ReconnectPolicy
from airflow_mysql_cdc.engine.binlog.stop_rules import Live, UntilCaughtUp
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.integration.test_binlog_reader import gtid_executed, read_all, row_images, table_name
from tests.support.mysql import ServerPool, execute, scalar

pytestmark = pytest.mark.mysql

FAST_RETRIES = ReconnectPolicy(max_attempts=4, initial_backoff_s=0.05, max_backoff_s=0.2)


def kill_binlog_dump_threads(endpoint: MySqlEndpoint, already_killed: set[int]) -> int:
    """KILL every GTID dump thread not killed before (a killed one lingers briefly in the list)."""
    rows = execute(
        endpoint, "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND = 'Binlog Dump GTID'"
    )
    fresh = {thread_id for (thread_id,) in rows} - already_killed
    for thread_id in fresh:
        try:
            execute(endpoint, f"KILL {thread_id}")
        except pymysql.err.OperationalError as error:
            if error.args[0] != 1094:  # "Unknown thread id": it ended between the query and the KILL
                raise
    already_killed |= fresh
    return len(fresh)


# --- purged binlogs --------------------------------------------------------------------------


def test_purged_binlog_raises_naming_the_missing_set_without_retrying(mysql_servers: ServerPool):
    server = mysql_servers.start(name="binlog-purged").endpoint
    execute(server, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)")
    checkpoint = gtid_executed(server)
    execute(server, "INSERT INTO d.t VALUES (1)", "INSERT INTO d.t VALUES (2)")
    execute(server, "FLUSH BINARY LOGS")
    current_file = execute(server, "SHOW BINARY LOG STATUS")[0][0]
    execute(server, f"PURGE BINARY LOGS TO '{current_file}'", "INSERT INTO d.t VALUES (3)")
    purged = GtidSet.parse(scalar(server, "SELECT @@GLOBAL.gtid_purged"))

    reader = BinlogReader(server, tables=["d.t"], heartbeat_s=0.2, reconnect=FAST_RETRIES)
    with pytest.raises(BinlogPurgedError) as raised:
        list(reader.read(checkpoint, UntilCaughtUp()))

    assert raised.value.missing == purged - checkpoint
    assert raised.value.missing.count() == 2
    assert str(raised.value.missing) in str(raised.value)
    assert not raised.value.is_retryable
    assert reader.reconnects == 0

    # The empty set means "the whole history", which is no longer there: refused the same way.
    with pytest.raises(BinlogPurgedError) as from_nothing:
        list(reader.read(GtidSet(), UntilCaughtUp()))
    assert from_nothing.value.missing == purged


# --- lost connections ------------------------------------------------------------------------


def _write_batches(endpoint: MySqlEndpoint, first_batch: int, batches: int) -> None:
    with endpoint.connect() as connection, connection.cursor() as cursor:
        for batch in range(first_batch, first_batch + batches):
            for i in range(20):
                cursor.execute("INSERT INTO t VALUES (%s, REPEAT('x', 200))", (batch * 10_000 + i,))
            # Large transactions (about 1 MB of binlog each, more than the socket buffers hold), so
            # that kills land in the middle of one and its partial rows must be discarded.
            cursor.execute("BEGIN")
            cursor.executemany(
                "INSERT INTO t VALUES (%s, REPEAT('y', 200))",
                [(batch * 10_000 + 1000 + i,) for i in range(4000)],
            )
            cursor.execute("COMMIT")


def test_killed_dump_thread_resumes_without_duplicates_or_gaps(mysql_database: MySqlEndpoint):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY, pad VARCHAR(200))")
    start = gtid_executed(mysql_database)
    _write_batches(mysql_database, 0, 4)
    tables = [table_name(mysql_database, "t")]

    reader = BinlogReader(mysql_database, tables=tables, heartbeat_s=0.2, reconnect=FAST_RETRIES)
    received = []
    killed: set[int] = set()
    end = None
    for transaction in reader.read(start, Live()):
        received.append(transaction)
        if len(received) % 7 == 0:
            kill_binlog_dump_threads(mysql_database, killed)
        if len(received) == 8:
            # Written after a kill: only a new connection can deliver these, so at least one
            # reconnect is certain however much the socket buffers held.
            _write_batches(mysql_database, 4, 1)
            end = gtid_executed(mysql_database)
        if end is not None and reader.position == end:
            break

    expected, expected_end = read_all(mysql_database, start, tables=tables)
    assert killed and reader.reconnects >= 1
    assert expected_end == end == reader.position
    assert [t.gtid for t in received] == [t.gtid for t in expected]
    assert row_images(received) == row_images(expected)


def test_reconnect_gives_up_after_bounded_attempts(mysql_servers: ServerPool):
    sandbox = mysql_servers.start(name="binlog-goes-away")
    server = sandbox.endpoint
    execute(server, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)")
    start = gtid_executed(server)
    execute(server, "INSERT INTO d.t VALUES (1)")

    reader = BinlogReader(server, tables=["d.t"], heartbeat_s=0.2, reconnect=FAST_RETRIES)
    received = []
    with pytest.raises(ConnectionLostError) as raised:
        for transaction in reader.read(start, Live()):
            received.append(transaction)
            sandbox.stop()

    assert raised.value.attempts == FAST_RETRIES.max_attempts
    assert raised.value.is_retryable
    assert raised.value.position == start | GtidSet.of([received[0].gtid])


# --- schema changes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER TABLE t ADD COLUMN extra INT",
        "RENAME TABLE t TO t_old",
        "DROP TABLE t",
        "TRUNCATE TABLE t",
        "CREATE INDEX by_v ON t (v)",
    ],
)
def test_ddl_on_tracked_table_stops_before_anything_after_it(mysql_database: MySqlEndpoint, statement: str):
    execute(
        mysql_database, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "CREATE TABLE t2 (id INT PRIMARY KEY)"
    )
    start = gtid_executed(mysql_database)
    execute(mysql_database, "INSERT INTO t VALUES (1, 1)")
    before_ddl = gtid_executed(mysql_database)
    execute(mysql_database, statement)
    ddl_gtid = gtid_executed(mysql_database) - before_ddl
    execute(mysql_database, "INSERT INTO t2 VALUES (2)")

    reader = BinlogReader(mysql_database, tables=[table_name(mysql_database, "t")], heartbeat_s=0.2)
    received = []
    with pytest.raises(SchemaChangeError) as raised:
        for transaction in reader.read(start, UntilCaughtUp()):
            received.append(transaction)

    assert [c.after for t in received for c in t.changes] == [{"id": 1, "v": 1}]
    assert GtidSet.of([raised.value.gtid]) == ddl_gtid
    assert statement.split()[0].lower() in raised.value.statement.lower()
    assert raised.value.tables == (table_name(mysql_database, "t"),)
    assert raised.value.position == before_ddl == reader.position
    message = str(raised.value)
    assert raised.value.gtid in message and "schema_changes" in message and "evolve" in message


def test_with_evolve_the_reader_yields_ddl_on_a_tracked_table_as_its_own_transaction(
    mysql_database: MySqlEndpoint,
):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    start = gtid_executed(mysql_database)
    execute(
        mysql_database,
        "INSERT INTO t VALUES (1, 1)",
        "ALTER TABLE t ADD COLUMN w INT DEFAULT 7",
        "INSERT INTO t VALUES (2, 2, 3)",
    )
    name = table_name(mysql_database, "t")
    reader = BinlogReader(mysql_database, tables=[name], heartbeat_s=0.2, evolve_schema=True)
    transactions = list(reader.read(start, UntilCaughtUp()))

    assert [t.schema_change is not None for t in transactions] == [False, True, False]
    assert transactions[1].schema_change.tables == (name,) and not transactions[1].changes
    assert "ADD COLUMN w" in transactions[1].schema_change.statement
    # The rows after it are decoded with the new table map (the compiled decoder rebuilt).
    assert [c.after for c in transactions[2].changes] == [{"id": 2, "v": 2, "w": 3}]
    assert [column.name for column in transactions[2].changes[0].shape.columns] == ["id", "v", "w"]


def test_ddl_on_other_tables_only_advances_the_position(mysql_database: MySqlEndpoint):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE other (id INT PRIMARY KEY)")
    start = gtid_executed(mysql_database)
    execute(
        mysql_database,
        "ALTER TABLE other ADD COLUMN v INT",
        "CREATE TABLE newer (id INT)",
        "DROP TABLE newer",
        "INSERT INTO t VALUES (1)",
    )
    transactions, position = read_all(mysql_database, start, tables=[table_name(mysql_database, "t")])
    assert position == gtid_executed(mysql_database)
    assert [len(t.changes) for t in transactions] == [0, 0, 0, 1]


def test_create_table_select_from_a_tracked_table_only_advances_the_position(mysql_database: MySqlEndpoint):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)")
    start = gtid_executed(mysql_database)
    execute(mysql_database, "CREATE TABLE copy SELECT * FROM t", "INSERT INTO t VALUES (3)")

    tracked, position = read_all(mysql_database, start, tables=[table_name(mysql_database, "t")])
    assert position == gtid_executed(mysql_database)
    assert [[c.after for c in t.changes] for t in tracked] == [[], [{"id": 3}]]

    everything, _ = read_all(mysql_database, start)  # every table tracked: the copy's rows too
    assert [[(c.table, c.after) for c in t.changes] for t in everything] == [
        [("copy", {"id": 1}), ("copy", {"id": 2})],
        [("t", {"id": 3})],
    ]


# --- incomplete row images -------------------------------------------------------------------


@pytest.mark.parametrize("image", ["MINIMAL", "NOBLOB"])
def test_minimal_row_image_in_a_session_raises(mysql_database: MySqlEndpoint, image: str):
    execute(
        mysql_database,
        "CREATE TABLE t (id INT PRIMARY KEY, v INT, b BLOB)",
        "INSERT INTO t VALUES (1, 1, 'x')",
    )
    start = gtid_executed(mysql_database)
    execute(mysql_database, f"SET SESSION binlog_row_image = {image}", "UPDATE t SET v = 2 WHERE id = 1")
    with pytest.raises(UnsupportedServerSettingError, match="binlog_row_image"):
        read_all(mysql_database, start, tables=[table_name(mysql_database, "t")])


def test_server_without_full_row_metadata_is_refused(mysql_servers: ServerPool):
    server = mysql_servers.start(["--binlog-row-metadata=MINIMAL"], name="binlog-minimal-metadata").endpoint
    with pytest.raises(UnsupportedServerSettingError, match="binlog_row_metadata is MINIMAL.*UNKNOWN_COL"):
        read_all(server, gtid_executed(server))


def test_statement_logged_change_to_tracked_table_raises(mysql_database: MySqlEndpoint):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)")
    start = gtid_executed(mysql_database)
    execute(mysql_database, "SET SESSION binlog_format = 'STATEMENT'", "INSERT INTO t VALUES (1)")
    reader = BinlogReader(mysql_database, tables=[table_name(mysql_database, "t")], heartbeat_s=0.2)
    received = []
    # MySQL 9.7 logs the statement with a status variable mysql-replication 1.0.17 does not know;
    # the reader skips it (engine/binlog/internals.py), so the error names the table and statement.
    with pytest.raises(StatementBasedChangeError, match="enforce binlog_format=ROW") as raised:
        received.extend(reader.read(start, UntilCaughtUp()))
    assert received == []
    assert reader.position == start
    assert raised.value.tables == (table_name(mysql_database, "t"),)
    assert "INSERT INTO t VALUES (1)" in str(raised.value)


def test_statement_logged_changes_are_marked_and_other_tables_rows_still_read(mysql_database: MySqlEndpoint):
    execute(
        mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE u (id VARCHAR(40) PRIMARY KEY)"
    )
    start = gtid_executed(mysql_database)
    execute(
        mysql_database,
        "SET SESSION binlog_format = 'MIXED'",
        "BEGIN",
        "INSERT INTO t VALUES (1)",  # safe: logged as the statement
        "INSERT INTO u VALUES (UUID())",  # unsafe: logged as rows
        "COMMIT",
    )
    tracked = [table_name(mysql_database, "t"), table_name(mysql_database, "u")]
    reader = BinlogReader(mysql_database, tables=tracked, heartbeat_s=0.2, mark_statement_changes=True)
    (mixed,) = list(reader.read(start, UntilCaughtUp()))

    [change] = mixed.statement_changes
    assert (change.statement, change.tables) == ("INSERT INTO t VALUES (1)", (tracked[0],))
    assert [(row.table, row.op) for row in mixed.changes] == [("u", "insert")]


def test_a_statement_logged_change_of_an_untracked_table_only_advances_the_position(
    mysql_database: MySqlEndpoint,
):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE other (id INT PRIMARY KEY)")
    start = gtid_executed(mysql_database)
    execute(mysql_database, "SET SESSION binlog_format = 'STATEMENT'", "INSERT INTO other VALUES (1)")
    reader = BinlogReader(mysql_database, tables=[table_name(mysql_database, "t")], heartbeat_s=0.2)
    (transaction,) = list(reader.read(start, UntilCaughtUp()))
    assert (list(transaction.changes), transaction.statement_changes) == ([], ())
    assert reader.position == gtid_executed(mysql_database)
