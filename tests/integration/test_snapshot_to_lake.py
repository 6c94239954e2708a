"""Snapshots into Delta, then streaming from their watermarks: exact tables, resumable, replaceable."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.apply_config import ApplyConfig
from airflow_mysql_cdc.engine.apply_loop import run_apply
from airflow_mysql_cdc.engine.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.gtid import GtidSet
from airflow_mysql_cdc.engine.sinks.delta_layout import LakeLayout
from airflow_mysql_cdc.engine.snapshot.delta_snapshot import SnapshotIncompleteError
from airflow_mysql_cdc.engine.snapshot.runner import run_sequentially, snapshot_table
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source
from tests.support.mysql import execute

pytestmark = pytest.mark.mysql


def _seed(endpoint: MySqlEndpoint, table: str, rows: int) -> None:
    execute(endpoint, ConcurrentWriter.DDL.replace("orders", table))
    values = ", ".join(
        f"({i}, 'c{i % 7}', {i}.10, 'new', '{{\"i\": {i}}}', NOW(6))" for i in range(1, rows + 1)
    )
    execute(endpoint, f"INSERT INTO {table} VALUES {values}")


def _stream(endpoint: MySqlEndpoint, lake: Path, tables: tuple[str, ...], start: str) -> None:
    run_apply(
        ApplyConfig(
            pipeline_id="snap", lake_root=str(lake), tables=tables, start_gtids=start,
            mode="until_caught_up", batch_max_rows=500, batch_max_seconds=0.2, heartbeat_s=0.5,
        ),
        endpoint,
    )  # fmt: skip


def test_snapshot_during_writes_then_streaming_equals_the_source(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    _seed(mysql_database, "orders", 400)
    _seed(mysql_database, "payments", 250)
    writers = [
        ConcurrentWriter(mysql_database, seconds=3, seed=1, table="orders"),
        ConcurrentWriter(mysql_database, seconds=3, seed=2, table="payments"),
    ]
    for writer in writers:
        writer.start()
    results = [
        snapshot_table(mysql_database, tmp_path, f"{database}.{table}", chunk_size=40)
        for table in ("orders", "payments")
    ]
    for writer in writers:
        writer.join()
        assert writer.error is None
    assert all(result.chunks_total > 5 for result in results)
    # Streaming starts from the earliest low watermark of all chunks of all tables.
    start = GtidSet.parse(results[0].stream_start) & GtidSet.parse(results[1].stream_start)
    _stream(mysql_database, tmp_path, (f"{database}.orders", f"{database}.payments"), str(start))
    for table in ("orders", "payments"):
        assert_lake_equals_source(mysql_database, tmp_path, database, table)


def test_killed_snapshot_resumes_at_the_next_unfinished_chunk(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    _seed(mysql_database, "orders", 300)
    table = f"{database}.orders"

    def dies_after_three(tasks):
        for number, window in enumerate(run_sequentially(tasks)):
            if number == 3:
                raise KeyboardInterrupt("killed during the fourth window")
            yield window

    with pytest.raises(KeyboardInterrupt):
        snapshot_table(mysql_database, tmp_path, table, chunk_size=50, run_windows=dies_after_three)
    with pytest.raises(SnapshotIncompleteError, match="unfinished chunk"):
        _stream(mysql_database, tmp_path, (table,), "")
    resumed = snapshot_table(mysql_database, tmp_path, table, chunk_size=50)
    assert resumed.resumed is True
    assert (resumed.chunks_total, resumed.chunks_run) == (7, 4)
    assert DeltaTable(str(LakeLayout(tmp_path).target(database, "orders"))).to_pyarrow_table().num_rows == 300
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")


def test_resnapshot_replaces_the_table_contents(mysql_database: MySqlEndpoint, tmp_path: Path) -> None:
    database = mysql_database.database
    _seed(mysql_database, "orders", 120)
    table = f"{database}.orders"
    snapshot_table(mysql_database, tmp_path, table, chunk_size=50)
    execute(
        mysql_database,
        "DELETE FROM orders WHERE id % 3 = 0",
        "UPDATE orders SET status = 'paid' WHERE id < 10",
    )
    again = snapshot_table(mysql_database, tmp_path, table, chunk_size=50)
    assert again.chunks_run == 0  # a finished snapshot is kept unless a restart is asked for
    replaced = snapshot_table(mysql_database, tmp_path, table, chunk_size=50, restart=True)
    assert replaced.chunks_run == replaced.chunks_total
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")
