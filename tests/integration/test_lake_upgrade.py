"""A lake written by version 0.1 moves its facts out of commit history on its first run after the upgrade.

Version 0.1 kept snapshot records and the applied set of a table that a crash left ahead in Delta
commit history, which any writer's log clean-up deletes. The first run of this version moves them
(snapshot logs, the state's intents) before it writes, so the clean-up that follows harms nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyResult
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.lake.delta_sink import DeltaSink
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.lake.state.table_positions import pipeline_app_id
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.snapshot import runner
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.lake import assert_lake_equals_source, changelog_entries
from tests.support.legacy_lake import LegacySnapshotWriter, commit_like_0_1, downgrade_state_to_0_1
from tests.support.maintenance import history_starts_after_version_zero, maintain_like_another_writer
from tests.support.pipeline import seed, writers_running
from tests.unit.sink_fixtures import (
    ITEMS,
    ORDERS,
    crash_before_the_state_commit,
    insert,
    through,
    transaction,
)


def _stream(endpoint: MySqlEndpoint, lake: Path, tables: tuple[str, ...], start: GtidSet) -> ApplyResult:
    return run_apply(
        ApplyConfig(
            pipeline_id="old", lake_root=str(lake), tables=tables, start_gtids=start,
            mode="until_caught_up", batch_max_rows=150, batch_max_seconds=0.2, heartbeat_s=0.5,
        ),
        endpoint,
    )  # fmt: skip


@pytest.mark.mysql
def test_a_version_0_1_lake_moves_its_snapshot_records_on_the_first_run_and_survives_the_clean_up(
    mysql_database: MySqlEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = mysql_database.database
    tables = (f"{database}.orders", f"{database}.payments")
    seed(mysql_database, "orders", 150)
    seed(mysql_database, "payments", 90)
    with monkeypatch.context() as legacy:
        legacy.setattr(runner, "DeltaSnapshotWriter", LegacySnapshotWriter)
        legacy.setattr(runner, "executor_writes_supported", lambda _: False)  # 0.1's rows went to the driver
        with writers_running(mysql_database, 3, "orders", "payments", pause_s=0.005):
            snapshots = [
                runner.snapshot_table(mysql_database, tmp_path, name, chunk_size=30) for name in tables
            ]
    start = snapshots[0].stream_start & snapshots[1].stream_start
    lake = LakeState(tmp_path, "old")
    for ref in map(TableRef.parse, tables):  # what 0.1 left: records in the targets' history only
        assert lake.snapshot_log(ref).rows() == []
        assert [record.snapshot_id for record in lake.snapshot_records(ref)][-1] in {
            s.snapshot_id for s in snapshots
        }

    # The first run after the upgrade moves the records before it writes anything.
    with writers_running(mysql_database, 4, "orders", "payments", pause_s=0.005):
        position = _stream(mysql_database, tmp_path, tables, start).end_gtids
    for ref, snapshot in zip(map(TableRef.parse, tables), snapshots, strict=True):
        moved = lake.snapshot_log(ref).rows()
        assert moved and all(row.migrated for row in moved)
        assert lake.snapshot_records(ref)[-1].snapshot_id == snapshot.snapshot_id
    members = lake.pipeline().members

    maintain_like_another_writer(tmp_path)
    assert history_starts_after_version_zero(lake.layout.target(database, "orders"))
    with writers_running(mysql_database, 5, "orders", "payments", pause_s=0.005):
        position = _stream(mysql_database, tmp_path, tables, position).end_gtids
    _stream(mysql_database, tmp_path, tables, position)
    assert lake.pipeline().members == members  # no table was taken for new: no snapshot again
    for table in ("orders", "payments"):
        assert_lake_equals_source(mysql_database, tmp_path, database, table)
        entries = [entry[:2] for entry in changelog_entries(tmp_path, database, table)]
        assert len(entries) == len(set(entries))


def test_a_version_0_1_crash_between_table_commits_is_replayed_exactly_after_the_upgrade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tables = ("shop.orders", "shop.items")
    sink = DeltaSink.at(tmp_path, "p1", tables=tables)
    sink.open(through(0))
    sink.apply([transaction(1, insert(ORDERS, {"id": 1, "status": "new", "qty": 1}))], through(1))
    batch = [
        transaction(2, insert(ORDERS, {"id": 2, "status": "new", "qty": 2})),
        transaction(
            3, insert(ORDERS, {"id": 3, "status": "new", "qty": 3}), insert(ITEMS, {"sku": "a", "price": 1.0})
        ),
    ]
    # 0.1 is killed after the orders tables committed batch 2, before the state did; its items
    # changelog had only gained columns (0.1 numbered that commit 2 too, recording the position before).
    monkeypatch.setattr(sink, "_append_changelog", _skip_items(sink._append_changelog))
    crash_before_the_state_commit(monkeypatch, sink)
    with pytest.raises(KeyboardInterrupt):
        sink.apply(batch, through(3))
    monkeypatch.undo()
    downgrade_state_to_0_1(tmp_path)
    items_changelog = DeltaTable(_create_items_changelog(tmp_path))
    commit_like_0_1(items_changelog, pipeline_app_id("p1"), 2, str(through(1)), epoch=1)

    recovered = DeltaSink.at(tmp_path, "p1", lease_s=0, tables=tables)
    assert recovered.open(through(0)) == through(1)
    assert LakeState(tmp_path, "p1").pipeline().intents == {2: through(3)}
    # The items changelog was not ahead: its app transaction was moved back to the state's batch.
    assert DeltaTable(items_changelog.table_uri).transaction_version(pipeline_app_id("p1")) == 1
    recovered.apply(batch, through(3))
    orders = sorted(
        row["id"]
        for row in DeltaTable(recovered.layout.changelog("shop", "orders")).to_pyarrow_table().to_pylist()
    )
    assert orders == [1, 2, 3]  # batch 2's orders changes are not applied twice
    items = DeltaTable(recovered.layout.changelog("shop", "items")).to_pyarrow_table().to_pylist()
    assert [row["sku"] for row in items] == ["a"]  # and the items changelog, not ahead, got its row
    recovered.release()  # the run ends: its last batch's position is recorded, no intent is left
    assert LakeState(tmp_path, "p1").pipeline().intents == {}


def _skip_items(append):
    def without_items(name, *args, **kwargs):
        if name != "shop.items":
            append(name, *args, **kwargs)

    return without_items


def _create_items_changelog(lake: Path) -> str:
    """The items changelog as 0.1 created it before the crash (empty, its columns added)."""
    from airflow_mysql_cdc.engine.lake.delta_layout import COMMIT_DATE_COLUMN, changelog_schema
    from airflow_mysql_cdc.engine.lake.layout import LakeLayout

    path = LakeLayout(lake).changelog("shop", "items")
    DeltaTable.create(
        path, schema=changelog_schema(ITEMS.columns), partition_by=[COMMIT_DATE_COLUMN], mode="ignore"
    )
    return path
