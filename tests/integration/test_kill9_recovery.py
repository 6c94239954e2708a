"""kill -9 of the application at random moments, then a re-run: the lake ends exact, nothing twice.

Small batches (40 rows) make Delta commits frequent, so random kill times land before, during and
between commits, and during start-up (imports, the sink's claim). ``scripts/soak-kill9 N`` runs
this with N trials.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
from pathlib import Path

import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.apply_process import launch_application
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source
from tests.support.mysql import execute, scalar

pytestmark = [pytest.mark.mysql, pytest.mark.xdist_group("kill9_workloads")]
TRIALS = int(os.environ.get("AIRFLOW_MYSQL_CDC_KILL9_TRIALS", "10"))
KILLS_PER_TRIAL = 2


def _config(database: str, lake: Path, start: GtidSet, target: GtidSet) -> ApplyConfig:
    return ApplyConfig(
        pipeline_id="kill9",
        lake_root=str(lake),
        tables=(f"{database}.orders",),
        start_gtids=start,
        mode="until_gtid_set",
        target_gtids=target,
        batch_max_rows=40,
        batch_max_seconds=0.05,
        heartbeat_s=0.5,
    )


def _changelog(lake: Path, database: str) -> list[tuple]:
    rows = DeltaTable(str(LakeLayout(lake).changelog(database, "orders"))).to_pyarrow_table().to_pylist()
    return sorted((r["_cdc_gtid"], r["_cdc_seq"], r["_cdc_op"], r["id"]) for r in rows)


@pytest.fixture(scope="module")
def workload(mysql_server: MySqlEndpoint, tmp_path_factory: pytest.TempPathFactory):
    """A fixed stretch of binlog (a writer ran, then stopped) and a clean reference changelog."""
    database = "kill9_workload"
    execute(mysql_server, f"DROP DATABASE IF EXISTS {database}", f"CREATE DATABASE {database}")
    endpoint = mysql_server.with_database(database)
    execute(endpoint, ConcurrentWriter.DDL)
    start = GtidSet.parse(scalar(endpoint, "SELECT @@gtid_executed"))
    ConcurrentWriter(endpoint, seconds=0.6, seed=11).run()
    target = GtidSet.parse(scalar(endpoint, "SELECT @@gtid_executed"))
    reference_lake = tmp_path_factory.mktemp("kill9-reference")
    run_apply(_config(database, reference_lake, start, target), endpoint)
    yield endpoint, start, target, _changelog(reference_lake, database)
    execute(mysql_server, f"DROP DATABASE IF EXISTS {database}")


@pytest.fixture(scope="module")
def workload_with_ddl(mysql_server: MySqlEndpoint, tmp_path_factory: pytest.TempPathFactory):
    """Like ``workload``, with schema changes between the writes: an ADD with a default, a DROP,
    a TRUNCATE and an index, each applied in place at its position."""
    database = "kill9_ddl_workload"
    execute(mysql_server, f"DROP DATABASE IF EXISTS {database}", f"CREATE DATABASE {database}")
    endpoint = mysql_server.with_database(database)
    execute(endpoint, ConcurrentWriter.DDL)
    start = GtidSet.parse(scalar(endpoint, "SELECT @@gtid_executed"))
    for number, statement in enumerate(
        [
            "ALTER TABLE orders ADD COLUMN extra INT NOT NULL DEFAULT 9 AFTER id",
            "ALTER TABLE orders ADD INDEX by_customer (customer), DROP COLUMN extra",
            "TRUNCATE TABLE orders",
            None,
        ]
    ):
        ConcurrentWriter(endpoint, seconds=0.3, seed=21 + number).run()
        if statement:
            execute(endpoint, statement)
    target = GtidSet.parse(scalar(endpoint, "SELECT @@gtid_executed"))
    reference_lake = tmp_path_factory.mktemp("kill9-ddl-reference")
    run_apply(_config(database, reference_lake, start, target), endpoint)
    yield endpoint, start, target, _changelog(reference_lake, database)
    execute(mysql_server, f"DROP DATABASE IF EXISTS {database}")


@pytest.mark.parametrize("trial", range(TRIALS))
def test_kill_9_at_random_moments_then_rerun_gives_the_exact_lake(
    workload, tmp_path: Path, trial: int
) -> None:
    _kill_randomly_then_rerun(workload, tmp_path, trial)


@pytest.mark.parametrize("trial", range(max(3, TRIALS // 3)))
def test_kill_9_at_random_moments_around_schema_changes_then_rerun_gives_the_exact_lake(
    workload_with_ddl, tmp_path: Path, trial: int
) -> None:
    _kill_randomly_then_rerun(workload_with_ddl, tmp_path, 500 + trial)


def _kill_randomly_then_rerun(workload, tmp_path: Path, trial: int) -> None:
    endpoint, start, target, reference_changelog = workload
    database = endpoint.database
    rng = random.Random(1000 + trial)
    config = _config(database, tmp_path / "lake", start, target)
    kill_times = []
    for _ in range(KILLS_PER_TRIAL):
        process = launch_application(config, tmp_path, endpoint)
        delay = rng.uniform(0.3, 2.5)
        kill_times.append(round(delay, 2))
        try:
            process.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
            process.wait()
    final = launch_application(config, tmp_path, endpoint)
    _, stderr = final.communicate(timeout=120)
    assert final.returncode == 0, f"kills at {kill_times}s: {stderr.decode()[-3000:]}"
    result = json.loads((tmp_path / "result.json").read_text())
    assert GtidSet.parse(result["end_gtids"]) >= target
    assert_lake_equals_source(endpoint, tmp_path / "lake", database, "orders")
    assert _changelog(tmp_path / "lake", database) == reference_changelog, f"kills at {kill_times}s"
