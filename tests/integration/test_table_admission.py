"""Adding a table to a running pipeline: snapshot only it, catch it up, then stream it with the rest."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.apply.admission import TableAdmissionError, join_pipeline_id
from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyResult
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.errors import NextStep
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineStateStore
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source, changelog_entries
from tests.support.mysql import execute, scalar
from tests.support.pipeline import finish, writing

pytestmark = pytest.mark.mysql


def _seed(endpoint: MySqlEndpoint, table: str, rows: int) -> None:
    execute(endpoint, ConcurrentWriter.DDL.replace("orders", table))
    values = ", ".join(f"({i}, 'c{i}', {i}.25, 'new', '[{i}]', NOW(6))" for i in range(1, rows + 1))
    execute(endpoint, f"INSERT INTO {table} VALUES {values}")


def _stream(endpoint: MySqlEndpoint, lake: Path, tables: tuple[str, ...], start: GtidSet) -> ApplyResult:
    return run_apply(
        ApplyConfig(
            pipeline_id="main", lake_root=str(lake), tables=tables, start_gtids=start,
            mode="until_caught_up", batch_max_rows=300, batch_max_seconds=0.2, heartbeat_s=0.5,
        ),
        endpoint,
    )  # fmt: skip


def _assert_changelog_has_no_duplicates(lake: Path, schema: str, table: str) -> None:
    counts = Counter(entry[:2] for entry in changelog_entries(lake, schema, table))
    assert [entry for entry, count in counts.items() if count > 1] == []


def test_table_snapshotted_after_the_checkpoint_joins_without_catch_up(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    orders, payments = f"{database}.orders", f"{database}.payments"
    _seed(mysql_database, "orders", 200)
    _seed(mysql_database, "payments", 200)
    first = snapshot_table(mysql_database, tmp_path, orders, chunk_size=50)
    writers = writing(mysql_database, 2.5, 0, "orders", "payments")
    checkpoint = _stream(mysql_database, tmp_path, (orders,), first.stream_start).end_gtids
    # The new table's snapshot is taken after the pipeline's position, with writers running.
    snapshot_table(mysql_database, tmp_path, payments, chunk_size=40)
    finish(writers)
    result = _stream(mysql_database, tmp_path, (orders, payments), checkpoint)
    assert result.caught_up == {}
    assert result.resumed_from == checkpoint
    for table in ("orders", "payments"):
        assert_lake_equals_source(mysql_database, tmp_path, database, table)
        _assert_changelog_has_no_duplicates(tmp_path, database, table)


def test_table_snapshotted_before_the_pipeline_position_is_caught_up_before_joining(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    orders, payments = f"{database}.orders", f"{database}.payments"
    _seed(mysql_database, "orders", 200)
    _seed(mysql_database, "payments", 200)
    first = snapshot_table(mysql_database, tmp_path, orders, chunk_size=50)
    writers = writing(mysql_database, 3, 0, "orders", "payments")
    # The snapshot of the new table is taken while the pipeline keeps streaming past it.
    added = snapshot_table(mysql_database, tmp_path, payments, chunk_size=40)
    finish(writers)
    position = _stream(mysql_database, tmp_path, (orders,), first.stream_start).end_gtids
    assert not position.issubset(added.stream_start)
    writers = writing(mysql_database, 1.5, 0, "orders", "payments")
    result = _stream(mysql_database, tmp_path, (orders, payments), position)
    finish(writers)
    # The catch-up stopped exactly at the pipeline's position; the main stream went on from there.
    assert result.caught_up == {payments: position | added.stream_start}
    assert result.resumed_from == position
    _stream(mysql_database, tmp_path, (orders, payments), result.end_gtids)
    assert scalar(mysql_database, "SELECT COUNT(*) FROM payments") > 0
    for table in ("orders", "payments"):
        assert_lake_equals_source(mysql_database, tmp_path, database, table)
        _assert_changelog_has_no_duplicates(tmp_path, database, table)


def test_table_without_a_snapshot_cannot_join_a_running_pipeline(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    orders, payments = f"{database}.orders", f"{database}.payments"
    _seed(mysql_database, "orders", 20)
    _seed(mysql_database, "payments", 20)
    first = snapshot_table(mysql_database, tmp_path, orders, chunk_size=50)
    position = _stream(mysql_database, tmp_path, (orders,), first.stream_start).end_gtids
    with pytest.raises(TableAdmissionError) as failure:
        _stream(mysql_database, tmp_path, (orders, payments), position)
    message = str(failure.value)
    assert f"{payments} is not yet streamed by pipeline 'main'" in message
    assert "has no snapshot in the lake" in message
    assert failure.value.next_step == NextStep.resnapshot(payments)  # the Airflow side says how
    # The refused run wrote nothing and let go of the pipeline: the next run starts at once.
    snapshot_table(mysql_database, tmp_path, payments, chunk_size=50)
    _stream(mysql_database, tmp_path, (orders, payments), position)
    assert_lake_equals_source(mysql_database, tmp_path, database, "payments")


def test_an_interrupted_catch_up_resumes_where_it_stopped(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    orders, payments = f"{database}.orders", f"{database}.payments"
    _seed(mysql_database, "orders", 100)
    _seed(mysql_database, "payments", 100)
    first = snapshot_table(mysql_database, tmp_path, orders, chunk_size=50)
    added = snapshot_table(mysql_database, tmp_path, payments, chunk_size=50)
    finish(writing(mysql_database, 3, 0, "orders", "payments"))
    position = _stream(mysql_database, tmp_path, (orders,), first.stream_start).end_gtids
    join_state = PipelineStateStore(
        LakeLayout(tmp_path).join_state(database, "payments", added.snapshot_id),
        join_pipeline_id("main", TableRef.parse(payments), added.snapshot_id),
    )
    stop = threading.Event()

    def stop_after_the_first_catch_up_batch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not stop.is_set():
            with contextlib.suppress(Exception):
                state = join_state.read()
                if state is not None and state.batch_seq > 0:
                    stop.set()
            time.sleep(0.02)

    watcher = threading.Thread(target=stop_after_the_first_catch_up_batch)
    watcher.start()
    config = ApplyConfig(
        pipeline_id="main", lake_root=str(tmp_path), tables=(orders, payments), start_gtids=position,
        mode="until_caught_up", batch_max_rows=10, batch_max_seconds=0.2, heartbeat_s=0.5,
        wave_max_rows=10,  # a catch-up commits per wave: small ones, so it can be stopped after one
    )  # fmt: skip
    with pytest.raises(TableAdmissionError, match="its catch-up ended at .* Rerun: the catch-up resumes"):
        run_apply(config, mysql_database, stop_requested=stop)
    watcher.join()
    stopped_at = join_state.read()
    assert stopped_at is not None and not position.issubset(stopped_at.applied_gtids)
    result = _stream(mysql_database, tmp_path, (orders, payments), position)
    assert result.caught_up == {payments: position | added.stream_start}
    for table in ("orders", "payments"):
        assert_lake_equals_source(mysql_database, tmp_path, database, table)
        _assert_changelog_has_no_duplicates(tmp_path, database, table)
