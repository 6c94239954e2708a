"""The pipeline's state survives the maintenance every Delta table gets, by any writer.

Compaction, checkpoints, the clean-up of expired log files and vacuum delete commit history by
design; nothing a run needs may live only there (docs/architecture.md). Each test runs the real
snapshot and binlog application against MySQL, lets "another writer" maintain every table of the
lake with the log retention at one second, and goes on.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyResult
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.lake.delta_sink import DeltaSink
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.snapshot.lake_commits import read_snapshot_progress
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.lake import assert_lake_equals_source, changelog_entries
from tests.support.maintenance import history_starts_after_version_zero, maintain_like_another_writer
from tests.support.pipeline import seed, writers_running
from tests.unit.sink_fixtures import ORDERS, crash_before_the_state_commit, insert, through, transaction

pytestmark = pytest.mark.mysql


def _stream(endpoint: MySqlEndpoint, lake: Path, tables: tuple[str, ...], start: GtidSet) -> ApplyResult:
    return run_apply(
        ApplyConfig(
            pipeline_id="durable", lake_root=str(lake), tables=tables, start_gtids=start,
            mode="until_caught_up", batch_max_rows=150, batch_max_seconds=0.2, heartbeat_s=0.5,
        ),
        endpoint,
    )  # fmt: skip


def _assert_exact(endpoint: MySqlEndpoint, lake: Path, database: str, *tables: str) -> None:
    for table in tables:
        assert_lake_equals_source(endpoint, lake, database, table)
        counts = Counter(entry[:2] for entry in changelog_entries(lake, database, table))
        assert [entry for entry, count in counts.items() if count > 1] == [], f"{table}: a change twice"


def test_runs_after_another_writers_maintenance_go_on_without_a_new_snapshot(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    orders, payments, refunds = (f"{database}.{name}" for name in ("orders", "payments", "refunds"))
    for table, rows in (("orders", 200), ("payments", 150), ("refunds", 60)):
        seed(mysql_database, table, rows)
    starts = [snapshot_table(mysql_database, tmp_path, name, chunk_size=40) for name in (orders, payments)]
    start = starts[0].stream_start & starts[1].stream_start
    with writers_running(mysql_database, 40, "orders", "payments", pause_s=0.005):
        position = _stream(mysql_database, tmp_path, (orders, payments), start).end_gtids
    members = LakeState(tmp_path, "durable").pipeline().members
    assert set(members) == {orders, payments} and all(members.values())

    touched = maintain_like_another_writer(tmp_path)
    layout = LakeLayout(tmp_path)
    target = layout.target(database, "orders")
    assert target in touched and layout.state in touched
    assert history_starts_after_version_zero(target)  # the snapshot's commits are gone from the log

    # The stream goes on from the lake, every table still a member with the same snapshot; a last
    # run after the writers stopped makes the lake comparable with the source as it is now.
    with writers_running(mysql_database, 41, "orders", "payments", pause_s=0.005):
        position = _stream(mysql_database, tmp_path, (orders, payments), position).end_gtids
    position = _stream(mysql_database, tmp_path, (orders, payments), position).end_gtids
    _assert_exact(mysql_database, tmp_path, database, "orders", "payments")
    assert LakeState(tmp_path, "durable").pipeline().members == members

    # A table snapshotted now joins, after another round of maintenance between its snapshot and the
    # run that catches it up (its snapshot records must outlive the clean-up too).
    with writers_running(mysql_database, 42, "orders", "payments", "refunds", pause_s=0.005):
        added = snapshot_table(mysql_database, tmp_path, refunds, chunk_size=20)
        position = _stream(mysql_database, tmp_path, (orders, payments), position).end_gtids
    maintain_like_another_writer(tmp_path)
    progress = read_snapshot_progress(LakeState(tmp_path), TableRef.parse(refunds))
    assert progress is not None and progress.complete and progress.snapshot_id == added.snapshot_id
    result = _stream(mysql_database, tmp_path, (orders, payments, refunds), position)
    assert refunds in result.caught_up
    _assert_exact(mysql_database, tmp_path, database, "orders", "payments", "refunds")
    assert LakeState(tmp_path, "durable").pipeline().members == members | {refunds: added.snapshot_id}


def test_a_crash_before_the_state_commit_replays_exactly_after_the_log_was_cleaned_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = DeltaSink.at(tmp_path, "p1", tables=("shop.orders",))
    sink.open(through(0))
    sink.apply([transaction(1, insert(ORDERS, {"id": 1, "status": "new", "qty": 1}))], through(1))
    crash_before_the_state_commit(monkeypatch, sink)
    batch = [
        transaction(2, insert(ORDERS, {"id": 2, "status": "new", "qty": 2})),
        transaction(3, insert(ORDERS, {"id": 3, "status": "new", "qty": 3})),
    ]
    with pytest.raises(KeyboardInterrupt):
        sink.apply(batch, through(3))
    monkeypatch.undo()
    maintain_like_another_writer(tmp_path)
    assert history_starts_after_version_zero(sink.layout.changelog("shop", "orders"))

    recovered = DeltaSink.at(tmp_path, "p1", lease_s=0, tables=("shop.orders",))
    assert recovered.open(through(0)) == through(1)
    recovered.apply(batch[:1], through(2))  # a replay cut shorter than the crashed batch
    recovered.apply(batch[1:], through(3))
    recovered.apply([transaction(4, insert(ORDERS, {"id": 4, "status": "x", "qty": 0}))], through(4))
    changelog = DeltaTable(recovered.layout.changelog("shop", "orders")).to_pyarrow_table().to_pylist()
    assert sorted(row["id"] for row in changelog) == [1, 2, 3, 4]
    target = DeltaTable(recovered.layout.target("shop", "orders")).to_pyarrow_table().to_pylist()
    assert sorted(row["id"] for row in target) == [1, 2, 3, 4]
    recovered.release()  # the run ends: its last batch's position is recorded, no intent is left
    assert LakeState(tmp_path, "p1").pipeline().intents == {}
