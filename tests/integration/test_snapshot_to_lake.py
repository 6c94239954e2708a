"""Snapshots into Delta, then streaming from their watermarks: exact tables, resumable, replaceable."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.errors import NextStep
from airflow_mysql_cdc.engine.lake.compare import lake_table
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
from airflow_mysql_cdc.engine.lake.maintenance.steps import MaintainedTable, maintain_table
from airflow_mysql_cdc.engine.snapshot.lake_commits import SnapshotIncompleteError, SnapshotInterleavedError
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.snapshot.window_task import run_sequentially
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.exact_numbers import (
    float32_bits,
    float64_bits,
    random_decimal,
    random_float32,
    random_float64,
)
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source
from tests.support.mysql import execute

pytestmark = pytest.mark.mysql


def _seed(endpoint: MySqlEndpoint, table: str, rows: int) -> None:
    execute(endpoint, ConcurrentWriter.DDL.replace("orders", table))
    values = ", ".join(
        f"({i}, 'c{i % 7}', {i}.10, 'new', '{{\"i\": {i}}}', NOW(6))" for i in range(1, rows + 1)
    )
    execute(endpoint, f"INSERT INTO {table} VALUES {values}")


def _stream(endpoint: MySqlEndpoint, lake: Path, tables: tuple[str, ...], start: GtidSet) -> None:
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
    start = results[0].stream_start & results[1].stream_start
    _stream(mysql_database, tmp_path, (f"{database}.orders", f"{database}.payments"), start)
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
        _stream(mysql_database, tmp_path, (table,), GtidSet())
    resumed = snapshot_table(mysql_database, tmp_path, table, chunk_size=50)
    assert resumed.resumed is True
    assert (resumed.chunks_total, resumed.chunks_run) == (7, 4)
    target = LakeLayout(tmp_path).target(database, "orders")
    assert DeltaTable(str(target)).to_pyarrow_table().num_rows == 300
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")
    # The killed window's file was written but never committed: no reader sees it, and the
    # maintenance's vacuum deletes it once it is older than the retention.
    referenced = set(DeltaTable(str(target)).file_uris())
    orphans = [path for path in Path(target).glob("*.parquet") if str(path) not in referenced]
    assert len(orphans) == 1
    two_hours_ago = time.time() - 7200
    os.utime(orphans[0], (two_hours_ago, two_hours_ago))
    policy = MaintenancePolicy(vacuum_retention_hours=1)
    report = maintain_table(
        DeltaTable(str(target)), MaintainedTable(str(target), "target", table, "id"), policy
    )
    assert report.vacuumed_files == 1 and not orphans[0].exists()
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")


def test_another_writer_committing_to_a_table_during_its_snapshot_stops_it_with_what_to_do(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    _seed(mysql_database, "orders", 200)
    table = f"{database}.orders"
    target = LakeLayout(tmp_path).target(database, "orders")

    def written_to_after_two_waves(tasks):
        for number, wave in enumerate(run_sequentially(tasks)):
            yield wave
            if number == 1:  # another job appends a row to the table while the snapshot runs
                write_deltalake(target, DeltaTable(target).to_pyarrow_table().slice(0, 1), mode="append")

    with pytest.raises(
        SnapshotInterleavedError, match="another writer committed.*then re-snapshot"
    ) as failure:
        snapshot_table(mysql_database, tmp_path, table, chunk_size=50, run_windows=written_to_after_two_waves)
    assert failure.value.next_step == NextStep.resnapshot(table)  # the operator says how in Airflow
    # Its row is in the table now: the snapshot cannot resume over it, it starts again (restart=True)
    restarted = snapshot_table(mysql_database, tmp_path, table, chunk_size=50, restart=True)
    assert restarted.resumed is False
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


MEASUREMENTS_DDL = (
    "CREATE TABLE measurements (id INT PRIMARY KEY, f1 FLOAT, f2 FLOAT NOT NULL, f_scaled FLOAT(9,3),"
    " d DOUBLE, d_scaled DOUBLE(12,2), amount DECIMAL(65,30))"
)
MEASUREMENTS_INSERT = "INSERT INTO measurements VALUES (%s, %s, %s, %s, %s, %s, %s)"


def _measurement(rng: random.Random, row_id: int) -> dict[str, Any]:
    """A row of random bit patterns (floats) and random digits (the decimal, as text: exact)."""
    return {
        "id": row_id, "f1": random_float32(rng), "f2": random_float32(rng),
        "f_scaled": rng.uniform(-1e5, 1e5), "d": random_float64(rng),
        "d_scaled": rng.uniform(-1, 1) * 10.0 ** rng.randint(-2, 9),
        "amount": f"{random_decimal(rng, 65, 30):f}",
    }  # fmt: skip


def _exact_floats(rows: Iterable[dict[str, Any]]) -> dict[int, tuple[int, int, int]]:
    """The unscaled FLOAT and DOUBLE columns by id, as bit patterns (scaled ones MySQL rounds)."""
    return {
        row["id"]: (float32_bits(row["f1"]), float32_bits(row["f2"]), float64_bits(row["d"])) for row in rows
    }


def test_float_heavy_table_snapshot_then_streamed_changes_equal_the_source_bit_for_bit(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    """The snapshot read FLOATs as MySQL's 6-digit text while the binlog path wrote exact values, so
    a row's lake value depended on which path wrote it last (a third of a FLOAT-heavy table)."""
    database = mysql_database.database
    rng = random.Random(5)
    execute(mysql_database, MEASUREMENTS_DDL)
    inserted = [_measurement(rng, row_id) for row_id in range(1, 601)]
    with mysql_database.connect() as connection, connection.cursor() as cursor:
        cursor.executemany(MEASUREMENTS_INSERT, [tuple(row.values()) for row in inserted])
    expected = _exact_floats(inserted)
    table = f"{database}.measurements"

    result = snapshot_table(mysql_database, tmp_path, table, chunk_size=100, run_windows=run_sequentially)

    assert result.chunks_total > 5
    # checked against the values inserted, not only against another SELECT of the source
    assert _exact_floats(lake_table(tmp_path, database, "measurements").to_pylist()) == expected

    with mysql_database.connect(autocommit=False) as connection, connection.cursor() as cursor:
        for row_id in range(1, 601, 3):  # new values, written by the binlog path
            changed = {
                "id": row_id,
                "f1": random_float32(rng),
                "f2": random_float32(rng),
                "d": random_float64(rng),
            }
            cursor.execute(
                "UPDATE measurements SET f1 = %(f1)s, f2 = %(f2)s, d = %(d)s WHERE id = %(id)s", changed
            )
            expected |= _exact_floats([changed])
        # other columns changed: the binlog rewrites the whole row, FLOATs included
        cursor.execute("UPDATE measurements SET amount = amount / 3 WHERE id % 3 = 2")
        connection.commit()
        cursor.execute("DELETE FROM measurements WHERE id % 30 = 0")
        expected = {row_id: bits for row_id, bits in expected.items() if row_id % 30}
        added = [_measurement(rng, row_id) for row_id in range(601, 701)]
        cursor.executemany(MEASUREMENTS_INSERT, [tuple(row.values()) for row in added])
        expected |= _exact_floats(added)
        connection.commit()
    _stream(mysql_database, tmp_path, (table,), result.stream_start)

    assert_lake_equals_source(mysql_database, tmp_path, database, "measurements")
    assert _exact_floats(lake_table(tmp_path, database, "measurements").to_pylist()) == expected
