"""A transaction far larger than the buffer budget completes, in order, without holding it in memory."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.binlog.backpressure import SpilledChanges
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import UntilCaughtUp
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.integration.test_binlog_reader import gtid_executed, table_name
from tests.support.mysql import execute

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

ROWS = 200_000
BUDGET_BYTES = 1 << 20
# One rows event (binlog_row_event_max_size, 8 KiB) holds about 900 of these rows: ~360 KB decoded.
ONE_ROWS_EVENT_BYTES = 512 * 1024


def _resident_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def test_transaction_of_200k_rows_completes_within_the_memory_budget(mysql_database: MySqlEndpoint):
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    start = gtid_executed(mysql_database)
    execute(
        mysql_database,
        "SET SESSION cte_max_recursion_depth = 1000000",
        f"""INSERT INTO t WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {ROWS})
            SELECT i, i * 7 FROM n""",
    )
    reader = BinlogReader(
        mysql_database,
        tables=[table_name(mysql_database, "t")],
        heartbeat_s=0.2,
        max_buffered_bytes=BUDGET_BYTES,
    )
    resident_before_kib = _resident_kib()

    (transaction,) = reader.read(start, UntilCaughtUp())

    assert isinstance(transaction.changes, SpilledChanges) and transaction.changes.spilled
    assert len(transaction.changes) == ROWS
    assert reader.peak_buffered_bytes <= BUDGET_BYTES + ONE_ROWS_EVENT_BYTES
    # Held in memory these 200k changes grow the process by about 78 MiB (measured); spilled, by ~7.
    assert _resident_kib() - resident_before_kib < 30 * 1024
    expected_id = 1
    for change in transaction.changes:  # streamed back from the spill file, in binlog order
        assert change.after == {"id": expected_id, "v": expected_id * 7}
        expected_id += 1
    assert expected_id == ROWS + 1
    transaction.changes.close()
