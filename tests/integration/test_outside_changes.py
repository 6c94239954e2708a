"""Another writer's data change between runs is caught at the next run's open; rearrangements pass.

Each test takes two tables through the real snapshot and binlog application against MySQL, lets
"another writer" change one target with deltalake between two runs, and runs again
(:mod:`airflow_mysql_cdc.engine.lake.outside_changes`): a DELETE and an UPDATE stop that table naming
the commits; a compaction and a vacuum do not; a log cleaned up past the pipeline's last commit
stops it too, saying so. The other table streams on in every case.
"""

from __future__ import annotations

import datetime
import logging
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyResult
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
from airflow_mysql_cdc.engine.lake.maintenance.run import maintain_lake
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.lake import assert_lake_equals_source
from tests.support.maintenance import maintain_like_another_writer
from tests.support.mysql import execute
from tests.support.pipeline import seed

pytestmark = pytest.mark.mysql

WAY_OUT = (
    "The pipeline stopped streaming it (the other tables go on) until it is snapshotted again: "
    're-snapshot the table (docs/operations.md, "A table stopped"). Only this pipeline may write its '
    "Delta tables: find out who else did first."
)


def _run(endpoint: MySqlEndpoint, lake: Path, tables: tuple[str, ...], start: GtidSet) -> ApplyResult:
    return run_apply(
        ApplyConfig(
            pipeline_id="outside", lake_root=str(lake), tables=tables, start_gtids=start,
            mode="until_caught_up", batch_max_seconds=0.2, heartbeat_s=0.5,
        ),
        endpoint,
    )  # fmt: skip


def _streamed(endpoint: MySqlEndpoint, lake: Path) -> tuple[tuple[str, str], ApplyResult]:
    """orders and payments snapshotted and streamed once (a writer changed both in between)."""
    database = endpoint.database
    tables = (f"{database}.orders", f"{database}.payments")
    for table in ("orders", "payments"):
        seed(endpoint, table, 30)
    starts = [snapshot_table(endpoint, lake, name).stream_start for name in tables]
    _change_both(endpoint, 1)
    first = _run(endpoint, lake, tables, starts[0] & starts[1])
    assert first.stopped == [] and first.stopped_tables == {}
    return (tables[0], tables[1]), first


def _change_both(endpoint: MySqlEndpoint, round_: int) -> None:
    execute(
        endpoint,
        f"UPDATE orders SET amount = amount + {round_} WHERE id <= 5",
        f"UPDATE payments SET amount = amount + {round_} WHERE id <= 5",
        f"DELETE FROM payments WHERE id = {20 + round_}",
    )


def _described(table: DeltaTable, version: int) -> str:
    """How the message names a commit: ``version 12: DELETE at 2026-11-26T10:00:00+00:00``."""
    fresh = DeltaTable(table.table_uri)  # history() numbers entries down from the version loaded
    entry = next(entry for entry in fresh.history() if entry["version"] == version)
    at = datetime.datetime.fromtimestamp(entry["timestamp"] / 1000, datetime.UTC).isoformat(
        timespec="seconds"
    )
    return f"version {version}: {entry['operation']} at {at}"


def test_a_delete_and_an_update_by_another_writer_between_runs_stop_that_table_naming_the_commits(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    (orders, payments), first = _streamed(mysql_database, tmp_path)
    target = DeltaTable(LakeLayout(tmp_path).target(mysql_database.database, "orders"))
    last = target.version()
    target.delete("id = 7")  # a careless backfill, a notebook
    target.update({"status": "'gone'"}, predicate="id = 8")
    _change_both(mysql_database, 2)

    second = _run(mysql_database, tmp_path, (orders, payments), first.end_gtids)

    reason = (
        f"its target was changed by another writer after the pipeline's last commit to it (version "
        f"{last}): {_described(target, last + 1)}, {_described(target, last + 2)} (not a data-neutral "
        "rearrangement such as OPTIMIZE or vacuum), so its rows may no longer be the source's"
    )
    message = f"{orders}: {reason}. {WAY_OUT.format(table=orders)}"
    assert "DELETE" in message and "UPDATE" in message
    assert [stop.describe() for stop in second.stopped] == [message]
    assert second.stopped_tables == {orders: message}
    assert_lake_equals_source(mysql_database, tmp_path, mysql_database.database, "payments")
    state = LakeState(tmp_path, "outside").pipeline()
    assert state is not None and set(state.members or {}) == {payments}
    # The run after it keeps it out and says why again; it fails no more (nothing new).
    third = _run(mysql_database, tmp_path, (orders, payments), second.end_gtids)
    assert third.stopped == [] and third.stopped_tables == {orders: message}


def test_a_compaction_and_a_vacuum_by_another_writer_between_runs_are_accepted(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    (orders, payments), first = _streamed(mysql_database, tmp_path)
    for name in ("orders", "payments"):
        for kind in ("target", "changelog"):
            layout = LakeLayout(tmp_path)
            path = (
                layout.target(mysql_database.database, name)
                if kind == "target"
                else layout.changelog(mysql_database.database, name)
            )
            table = DeltaTable(path)
            table.optimize.compact()
            table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    _change_both(mysql_database, 2)

    second = _run(mysql_database, tmp_path, (orders, payments), first.end_gtids)

    assert second.stopped == [] and second.stopped_tables == {}
    for name in ("orders", "payments"):
        assert_lake_equals_source(mysql_database, tmp_path, mysql_database.database, name)
    # Each open vouched for what it found: the next reads only the commits made since.
    checked = LakeState(tmp_path, "outside").pipeline().checked_versions  # type: ignore[union-attr]
    assert checked is not None and set(checked) == {
        f"{kind}:{table}" for kind in ("target", "changelog") for table in (orders, payments)
    }


def test_a_log_cleaned_up_past_the_pipelines_last_commit_stops_the_table_and_says_so(
    mysql_database: MySqlEndpoint, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Whether another writer changed the rows in the commits no longer in the log cannot be known:
    refused, not guessed (the module docstring says why not a comparison with the source)."""
    (orders, payments), first = _streamed(mysql_database, tmp_path)
    target = DeltaTable(LakeLayout(tmp_path).target(mysql_database.database, "orders"))
    last = target.version()
    target.alter.set_table_properties({"delta.logRetentionDuration": "interval 1 seconds"})
    target.alter.set_table_properties({"delta.deletedFileRetentionDuration": "interval 7 days"})
    target.create_checkpoint()
    time.sleep(1.5)
    target.cleanup_metadata()  # the first commit after the pipeline's is gone from the log
    _change_both(mysql_database, 2)

    with caplog.at_level(logging.WARNING):
        second = _run(mysql_database, tmp_path, (orders, payments), first.end_gtids)

    reason = (
        f"the commit log of its target after the pipeline's last commit to it (version {last}, now "
        f"{last + 2}) was cleaned up (the oldest one still readable is version {last + 2}), so whether "
        "another writer changed its rows in between cannot be known; the pipeline does not stream a "
        "table it cannot vouch for"
    )
    assert f"{orders}: {reason}" in caplog.text  # the warning
    assert [stop.describe() for stop in second.stopped] == [
        f"{orders}: {reason}. {WAY_OUT.format(table=orders)}"
    ]
    assert_lake_equals_source(mysql_database, tmp_path, mysql_database.database, "payments")


def test_the_pipelines_own_commits_that_are_not_batches_pass_the_next_open(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    """Maintenance under the lease (vouching for its own commits, which another writer's log clean-up
    then deletes), a schema change's steps (columns added, existing rows given their value, a
    TRUNCATE) and a re-snapshot: each names its own version or only rearranges files."""
    (orders, payments), first = _streamed(mysql_database, tmp_path)
    tables = (orders, payments)
    maintain_lake(LakeState(tmp_path, "outside"), tables, MaintenancePolicy(small_files=2), force=True)
    maintain_like_another_writer(tmp_path)  # its clean-up deletes the built-in maintenance's commits
    execute(
        mysql_database,
        "ALTER TABLE orders ADD COLUMN priority INT NOT NULL DEFAULT 3",
        "TRUNCATE TABLE payments",
        "INSERT INTO payments (id, customer, amount, status) VALUES (500, 'c', 1, 'new')",
    )
    second = _run(mysql_database, tmp_path, tables, first.end_gtids)
    assert second.stopped_tables == {}
    snapshot_table(mysql_database, tmp_path, payments, restart=True)
    _change_both(mysql_database, 3)
    third = _run(mysql_database, tmp_path, tables, second.end_gtids)
    assert third.stopped_tables == {} and third.stopped == []
    for name in ("orders", "payments"):
        assert_lake_equals_source(mysql_database, tmp_path, mysql_database.database, name)
