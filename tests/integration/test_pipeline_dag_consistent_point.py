"""A run that snapshots (or admits) tables ends only where every table is exact: at its consistent point.

Each snapshot chunk reflects the source at its own high watermark, so a run whose interval ended
before the chunks were read must stream on until its position contains every chunk's high watermark.
Here the interval end is already past when the run starts (the usual first run, and a table added to
a running pipeline), writers run throughout, and the lake is compared with a replica frozen at
exactly the published end set. A DDL in the middle of the first run's snapshot restarts it, and the
run still ends exact.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.airflow import task_states, xcom_value
from tests.support.frozen_replica import FrozenReplica
from tests.support.mysql import execute
from tests.support.pipeline import (
    ALL_TASKS,
    Pipeline,
    assert_exact_at,
    checkpoint,
    now,
    seed,
    writers_running,
)

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db"), pytest.mark.slow]


def _ends_at_the_consistent_point(dag_run) -> None:
    """The run's end set contains its snapshot's consistent point, past its interval end."""
    assert task_states(dag_run) == dict.fromkeys(ALL_TASKS, "success")
    record = checkpoint(dag_run)
    snapshot, applied = (
        xcom_value(dag_run, "replicate", "snapshot"),
        xcom_value(dag_run, "replicate", "applied"),
    )
    consistent = GtidSet.parse(snapshot["consistent_point"])
    assert not consistent.is_empty()
    assert consistent.issubset(GtidSet.parse(record["end_gtids"]))
    assert applied["consistent_point"] and GtidSet.parse(applied["consistent_point"]).issuperset(consistent)
    # The interval ended before the snapshot: the run went on past it, to the consistent point.
    segment_end_us = int(dag_run.data_interval_end.timestamp() * 1_000_000)
    assert applied["transactions"] > 0 and applied["last_commit_timestamp_us"] >= segment_end_us


def _when_the_snapshot_committed_a_chunk(
    pipeline: Pipeline, endpoint: MySqlEndpoint, table: str, statement: str
):
    """Run ``statement`` once the table's snapshot has committed its first chunk (it is mid-snapshot)."""
    location = str(LakeLayout(pipeline.lake).target(endpoint.database, table))

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                history = DeltaTable(location).history()
            except Exception:  # noqa: BLE001 - the table does not exist yet
                history = []
            if any(
                '"phase": "chunk"' in str(commit.get("airflow_mysql_cdc.snapshot_commit", ""))
                for commit in history
            ):
                execute(endpoint, statement)
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def test_a_first_run_and_a_joining_table_with_intervals_already_past_end_where_every_table_is_exact(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    database = mysql_database.database
    seed(mysql_database, "orders", 400)
    seed(mysql_database, "payments", 400)
    pipeline = Pipeline(monkeypatch, tmp_path, mysql_database.with_database(None), [f"{database}.orders"],
                        chunk_size=40)  # fmt: skip
    with writers_running(mysql_database, 31, "orders", "payments", pause_s=0.005):
        # The first run: its interval ended before the snapshot started (its segment alone is empty).
        # A column is added once the snapshot committed its first chunk: the snapshot restarts.
        watcher = _when_the_snapshot_committed_a_chunk(
            pipeline, mysql_database, "orders", "ALTER TABLE orders ADD COLUMN score INT DEFAULT 3"
        )
        interval_end = now()
        first_run = pipeline.run(interval_end)
        watcher.join(timeout=5)
        first = checkpoint(first_run)
        assert first["segment_end"] == interval_end.isoformat()
        assert_exact_at(frozen_replica, first, pipeline.lake, database, "orders")
        _ends_at_the_consistent_point(first_run)
        assert [table["restarts"] for table in xcom_value(first_run, "replicate", "snapshot")["tables"]] == [
            1
        ]
        location = str(LakeLayout(pipeline.lake).target(database, "orders"))
        assert "score" in DeltaTable(location).schema().to_arrow().names

        # payments joins in a run whose interval, too, ended before its snapshot started.
        pipeline.configure(tables=[f"{database}.orders", f"{database}.payments"])
        joined_run = pipeline.run(now())
        joined = checkpoint(joined_run)
        assert joined["start_gtids"] == first["end_gtids"]
        assert_exact_at(frozen_replica, joined, pipeline.lake, database, "orders", "payments")
        _ends_at_the_consistent_point(joined_run)
        snapshotted = [table["table"] for table in xcom_value(joined_run, "replicate", "snapshot")["tables"]]
        assert snapshotted == [f"{database}.payments"]
