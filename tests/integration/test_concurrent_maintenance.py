"""Another process maintains the lake's tables while a run applies: rearrangements never fail the run.

A Spark or Databricks OPTIMIZE job, or a delta-rs script, may compact the pipeline's tables at any
time. Its commits only rearrange files (``dataChange=false``); the binlog application accepts them
and redoes a commit that lost the race (:mod:`airflow_mysql_cdc.engine.lake.table_handles`). A
commit that changes rows is still another writer, and fences the run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.lake.delta_sink import DeltaSink
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineFencedError
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.lake import assert_lake_equals_source, changelog_entries
from tests.support.pipeline import seed, writers_running
from tests.unit.sink_fixtures import ORDERS, insert, through, transaction

_COMPACTOR = textwrap.dedent(
    """
    import sys, time
    from deltalake import DeltaTable
    paths, deadline, done = sys.argv[1:-1], time.monotonic() + float(sys.argv[-1]), 0
    while time.monotonic() < deadline:
        for path in paths:
            try:
                table = DeltaTable(path)
                metrics = table.optimize.compact()
                done += metrics["numFilesRemoved"] > 0
            except Exception as error:  # a table not created yet, or our own lost race
                print("compactor:", type(error).__name__, str(error)[:120], flush=True)
        time.sleep(0.05)
    print("compactions", done, flush=True)
    """
)


def _apply(endpoint: MySqlEndpoint, lake: Path, table: str, start: GtidSet, mode: str = "until_caught_up"):
    return run_apply(
        ApplyConfig(
            pipeline_id="p", lake_root=str(lake), tables=(table,), start_gtids=start, mode=mode,
            batch_max_rows=40, batch_max_seconds=0.1, heartbeat_s=0.5,
        ),
        endpoint,
    )  # fmt: skip


@pytest.mark.mysql
def test_a_run_applying_while_another_process_compacts_the_same_tables_stays_exact(
    mysql_database: MySqlEndpoint, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="airflow_mysql_cdc.engine.lake.table_handles")
    database = mysql_database.database
    seed(mysql_database, "orders", 300)
    start = snapshot_table(mysql_database, tmp_path, f"{database}.orders", chunk_size=30).stream_start
    position = _apply(mysql_database, tmp_path, f"{database}.orders", start).end_gtids  # tables exist
    target, changelog = tmp_path / database / "orders", tmp_path / "_changelog" / database / "orders"
    compactor = subprocess.Popen(
        [sys.executable, "-c", _COMPACTOR, str(target), str(changelog), "8"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    runs = 0
    try:
        with writers_running(mysql_database, 5, "orders", pause_s=0.002):
            deadline = time.monotonic() + 7
            while time.monotonic() < deadline:
                position = _apply(mysql_database, tmp_path, f"{database}.orders", position).end_gtids
                runs += 1
    finally:
        output, _ = compactor.communicate(timeout=60)
    compactions = int(output.strip().rsplit(" ", 1)[-1])
    assert compactions > 0, output  # the other process did rearrange the tables during the runs
    assert "was rearranged by another writer" in caplog.text  # and the runs went on across it
    operations = [commit["operation"] for commit in DeltaTable(str(target)).history()]
    assert "OPTIMIZE" in operations and "MERGE" in operations
    _apply(mysql_database, tmp_path, f"{database}.orders", position)
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")
    entries = [entry[:2] for entry in changelog_entries(tmp_path, database, "orders")]
    assert len(entries) == len(set(entries)), "a change reached the changelog twice"
    assert runs >= 1


def test_a_commit_that_changes_rows_by_another_writer_still_fences_the_run(tmp_path: Path) -> None:
    sink = DeltaSink.at(tmp_path, "p1", tables=("shop.orders",))
    sink.open(through(0))
    sink.apply([transaction(1, insert(ORDERS, {"id": 1, "status": "new", "qty": 1}))], through(1))
    target = DeltaTable(sink.layout.target("shop", "orders"))
    target.optimize.compact()  # a rearrangement: accepted
    sink.apply([transaction(2, insert(ORDERS, {"id": 2, "status": "new", "qty": 2}))], through(2))
    rogue = pa.table({"id": [99], "status": ["rogue"], "qty": [0]})
    write_deltalake(target, rogue, mode="append", schema_mode="merge")  # rows by someone else
    with pytest.raises(PipelineFencedError, match="WRITE by another writer"):
        sink.apply([transaction(3, insert(ORDERS, {"id": 3, "status": "new", "qty": 3}))], through(3))


def test_a_table_feature_delta_rs_cannot_write_fails_the_run_before_any_data_moves(tmp_path: Path) -> None:
    from deltalake.table import TableFeatures

    from airflow_mysql_cdc.engine.lake.foreign_commits import UnsupportedTableFeatureError

    tables = ("shop.items", "shop.orders")
    sink = DeltaSink.at(tmp_path, "p1", tables=tables)
    sink.open(through(0))
    sink.apply([transaction(1, insert(ORDERS, {"id": 1, "status": "new", "qty": 1}))], through(1))
    sink.release()
    orders = DeltaTable(sink.layout.target("shop", "orders"))
    orders.alter.add_feature([TableFeatures.DeletionVectors], allow_protocol_versions_increase=True)
    versions = {orders.table_uri: DeltaTable(orders.table_uri).version()}

    with pytest.raises(UnsupportedTableFeatureError) as refused:
        DeltaSink.at(tmp_path, "p1", tables=tables).open(through(1))
    message = str(refused.value)
    assert "deletionVectors" in message and "target of shop.orders" in message
    assert "DROP FEATURE deletionVectors" in message  # the way out
    assert DeltaTable(orders.table_uri).version() == versions[orders.table_uri]  # nothing moved
    # The refused run let go of the pipeline: a run after the fix starts at once.
    assert DeltaSink.at(tmp_path, "p1", tables=("shop.items",)).open(through(1)) == through(1)
