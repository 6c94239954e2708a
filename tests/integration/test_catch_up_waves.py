"""A catch-up merges each table once per wave, not once per micro-batch, and the lake stays exact."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.lake import assert_lake_equals_source, changelog_entries
from tests.support.pipeline import finish, seed, writing

pytestmark = pytest.mark.mysql


def _catch_up(endpoint: MySqlEndpoint, lake: Path, tables: tuple[str, ...], start: GtidSet, **settings):
    config = ApplyConfig(
        pipeline_id="waves", lake_root=str(lake), tables=tables, start_gtids=start, mode="until_caught_up",
        batch_max_rows=100, batch_max_seconds=0.2, heartbeat_s=0.5, **settings,
    )  # fmt: skip
    assert config.catches_up()
    return run_apply(config, endpoint)


def _merges(path: Path, after_version: int) -> int:
    return sum(
        commit["operation"] == "MERGE" and commit["version"] > after_version
        for commit in DeltaTable(str(path)).history()
    )


def test_a_catch_up_merges_each_table_once_per_wave(
    mysql_database: MySqlEndpoint, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="airflow_mysql_cdc.apply")
    database = mysql_database.database
    tables = (f"{database}.orders", f"{database}.payments")
    seed(mysql_database, "orders", 300)
    seed(mysql_database, "payments", 200)
    starts = [snapshot_table(mysql_database, tmp_path, name, chunk_size=100) for name in tables]
    start = starts[0].stream_start & starts[1].stream_start
    finish(writing(mysql_database, 2.5, 11, "orders", "payments"))  # a backlog of thousands of changes
    target = tmp_path / database / "orders"
    version = DeltaTable(str(target)).version()

    result = _catch_up(mysql_database, tmp_path, tables, start)
    assert sum(result.rows_by_table.values()) > 1000  # far more than batch_max_rows
    assert result.batches == 1 and _merges(target, version) == 1  # one wave: one MERGE per table
    for table in ("orders", "payments"):
        assert_lake_equals_source(mysql_database, tmp_path, database, table)

    # Small waves and a memory bound so low that every wave spills its changelog rows to local files.
    finish(writing(mysql_database, 2.5, 12, "orders", "payments"))
    version = DeltaTable(str(target)).version()
    result = _catch_up(
        mysql_database, tmp_path, tables, result.end_gtids, wave_max_rows=600, wave_memory_mb=0.02
    )
    assert result.batches >= 2 and 2 <= _merges(target, version) <= result.batches
    waves = [r.getMessage() for r in caplog.records if "wave" in r.getMessage()]
    assert any("changelog rows spilled to local files" in message for message in waves), "\n".join(waves)
    for table in ("orders", "payments"):
        assert_lake_equals_source(mysql_database, tmp_path, database, table)
        entries = [entry[:2] for entry in changelog_entries(tmp_path, database, table)]
        assert len(entries) == len(set(entries)), f"{table}: a change reached the changelog twice"
