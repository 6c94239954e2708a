"""Compare a source table with its Delta copy, value for value, through the shared type mapping."""

from __future__ import annotations

import random
import threading
import time

import pymysql
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import UntilGtidSet
from airflow_mysql_cdc.engine.lake.compare import compare_table
from airflow_mysql_cdc.engine.lake.delta_layout import GTID_COLUMN, OP_COLUMN, SEQUENCE_COLUMN
from airflow_mysql_cdc.engine.lake.layout import LakeLayout, LakeRoot
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet


def orders_apply_config(database: str, lake: LakeRoot, start: GtidSet, **overrides) -> ApplyConfig:
    """An application of ``ConcurrentWriter``'s ``orders`` table, with small, fast batches."""
    values = {
        "pipeline_id": "p",
        "lake_root": str(lake),
        "tables": (f"{database}.orders",),
        "start_gtids": start,
        "batch_max_rows": 200,
        "batch_max_seconds": 0.3,
        "heartbeat_s": 0.5,
        **overrides,
    }
    return ApplyConfig(**values)


def assert_lake_equals_source(
    endpoint: MySqlEndpoint,
    lake_root: LakeRoot,
    schema: str,
    table: str,
    storage_options: dict[str, str] | None = None,
) -> None:
    comparison = compare_table(endpoint, lake_root, schema, table, storage_options)
    assert comparison.type_mismatches == ()
    assert (comparison.missing_from_lake, comparison.extra_in_lake) == ((), ()), (
        f"missing {comparison.missing_from_lake[:5]} extra {comparison.extra_in_lake[:5]}"
    )
    assert comparison.lake_rows == comparison.source_rows
    assert comparison.equal


def changelog_entries(
    lake_root: LakeRoot, schema: str, table: str, storage_options: dict[str, str] | None = None
) -> list[tuple[str, int, str]]:
    """(gtid, position in transaction, op) of every changelog row, in binlog order."""
    table_uri = LakeLayout(lake_root).changelog(schema, table)
    columns = [GTID_COLUMN, SEQUENCE_COLUMN, OP_COLUMN]
    changelog = DeltaTable(table_uri, storage_options=storage_options)
    rows = changelog.to_pyarrow_table(columns=columns).to_pylist()
    entries = [(row[GTID_COLUMN], row[SEQUENCE_COLUMN], row[OP_COLUMN]) for row in rows]
    return sorted(entries, key=lambda e: (int(e[0].rsplit(":", 1)[1]), e[1]))


def binlog_entries(
    endpoint: MySqlEndpoint, table: str, start: GtidSet, end: GtidSet
) -> list[tuple[str, int, str]]:
    """The same triples read straight from the binlog: what the changelog must hold, once each."""
    reader = BinlogReader(endpoint.with_database(None), tables=[table])
    entries = []
    for transaction in reader.read(start, UntilGtidSet(end)):
        entries += [
            (str(transaction.gtid), seq, str(change.op)) for seq, change in enumerate(transaction.changes)
        ]
    return entries


_RETRYABLE = (1205, 1213)  # lock wait timeout, deadlock (a migration tool's triggers and locks)


class ConcurrentWriter(threading.Thread):
    """Random inserts, updates, deletes, key-changing updates and multi-row transactions on ``orders``.

    The table: ``orders(id INT PRIMARY KEY, customer VARCHAR(40), amount DECIMAL(10,2),
    status ENUM('new','paid','shipped'), note JSON, updated_at DATETIME(6))``.
    """

    DDL = (
        "CREATE TABLE orders (id INT PRIMARY KEY, customer VARCHAR(40) NOT NULL, amount DECIMAL(10,2),"
        " status ENUM('new','paid','shipped') NOT NULL, note JSON, updated_at DATETIME(6))"
    )

    def __init__(
        self,
        endpoint: MySqlEndpoint,
        *,
        seconds: float | None,
        seed: int = 7,
        table: str = "orders",
        pause_s: float = 0.0,
    ) -> None:
        """Writes for ``seconds``, or until :meth:`stop` when None; ``pause_s`` between transactions."""
        super().__init__(name="concurrent-writer", daemon=True)
        self.endpoint = endpoint
        self.seconds = seconds
        self.pause_s = pause_s
        self.stopped = threading.Event()
        self.rng = random.Random(seed)
        self.table = table
        self.transactions = 0
        self.error: BaseException | None = None

    def stop(self) -> None:
        self.stopped.set()

    def run(self) -> None:
        try:
            self._write()
        except BaseException as error:  # noqa: BLE001 - re-raised by the test through .error
            self.error = error

    def _write(self) -> None:
        deadline = time.monotonic() + (self.seconds if self.seconds is not None else float("inf"))
        with self.endpoint.connect(autocommit=False) as connection, connection.cursor() as cursor:
            while time.monotonic() < deadline and not self.stopped.is_set():
                try:
                    self._transaction(cursor)
                except pymysql.err.OperationalError as error:
                    if error.args[0] not in _RETRYABLE:
                        raise
                    connection.rollback()  # what an application does on a deadlock: try again
                    continue
                connection.commit()
                self.transactions += 1
                if self.pause_s:
                    self.stopped.wait(self.pause_s)

    def _transaction(self, cursor: pymysql.cursors.Cursor) -> None:
        rng, table = self.rng, self.table
        for _ in range(rng.randint(1, 4)):
            choice = rng.random()
            key = rng.randint(1, 300)
            if choice < 0.45:
                cursor.execute(
                    f"INSERT INTO {table} (id, customer, amount, status, note, updated_at)"
                    " VALUES (%s, %s, %s, %s, %s, NOW(6))"
                    " ON DUPLICATE KEY UPDATE amount = VALUES(amount), updated_at = NOW(6)",
                    (
                        key,
                        f"c{rng.randint(1, 50)}",
                        rng.randint(0, 99999) / 100,
                        "new",
                        '{"k": [1, 2]}',
                    ),
                )
            elif choice < 0.7:
                cursor.execute(
                    f"UPDATE {table} SET status = %s, amount = amount + 1, updated_at = NOW(6)"
                    " WHERE id BETWEEN %s AND %s",
                    (rng.choice(["paid", "shipped"]), key, key + 3),
                )
            elif choice < 0.85:
                cursor.execute(f"DELETE FROM {table} WHERE id = %s", (key,))
            else:
                # Key-changing update; IGNORE skips it when the new key is taken.
                cursor.execute(
                    f"UPDATE IGNORE {table} SET id = %s WHERE id = %s", (rng.randint(301, 600), key)
                )
