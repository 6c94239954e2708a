"""The shipped example DAG end to end: real Airflow runs, real MySQL, spark-submit, Delta.

Each test configures ``dags/mysql_cdc_daily.py`` through a JSON file (as a user would), with a
short fixed interval (``every 6s``) so several runs fit in a test; ``dag.test(logical_date=T)``
runs the interval ending at ``T``, and running a date again clears it first, as the UI does.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from airflow_mysql_cdc.engine.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.gtid import GtidSet
from airflow_mysql_cdc.engine.sinks.delta_layout import LakeLayout
from airflow_mysql_cdc.engine.sinks.pipeline_state import PipelineStateStore
from tests.support.airflow import connection_env, run_dag, task_states, xcom_value
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source, changelog_entries
from tests.support.mysql import create_user, execute

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db")]
DAG_FILE = "pipeline_daily.py"
ALL_TASKS = (
    "check_prerequisites", "load_checkpoint", "resumability", "plan_segment", "snapshot",
    "apply_segment", "publish_checkpoint",
)  # fmt: skip
SPARK_LOCAL = json.dumps({"conn_type": "spark", "host": "local[2]"})


class Pipeline:
    """One configured copy of the example DAG, with its own DAG id, lake and connection."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        workdir: Path,
        source: MySqlEndpoint,
        tables: list[str],
        **overrides: Any,
    ) -> None:
        self.monkeypatch = monkeypatch
        self.dag_id = f"pipeline_{uuid.uuid4().hex[:10]}"
        self.lake = workdir / "lake"
        self.config_file = workdir / "pipeline.json"
        self.config = {
            "dag_id": self.dag_id, "pipeline_id": "e2e", "mysql_cdc_conn_id": "cdc_source",
            "spark_conn_id": "spark_local", "tables": tables, "lake_root": str(self.lake),
            "schedule": "every 6s", "start_date": "2026-01-01T00:00:00+00:00", "chunk_size": 60,
            "retries": 0, "sensor_mode": "poke", "sensor_poke_interval_s": 1,
            "resumability_timeout_s": 40, "batch_max_seconds": 0.3,
        } | overrides  # fmt: skip
        self.configure()
        self.point_at(source)
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", SPARK_LOCAL)

    def configure(self, **changes: Any) -> None:
        self.config |= changes
        self.config_file.write_text(json.dumps(self.config))
        self.monkeypatch.setenv("AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG", str(self.config_file))

    def point_at(self, source: MySqlEndpoint, server_id: int = 7301) -> None:
        """What a user does in the UI: edit the connection (e.g. to the promoted replica)."""
        self.monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", connection_env(source, server_id=server_id))

    def run(self, interval_end: datetime.datetime):
        return run_dag(DAG_FILE, self.dag_id, logical_date=interval_end)

    def lake_position(self) -> GtidSet:
        state = PipelineStateStore(LakeLayout(self.lake).state, "e2e").read()
        assert state is not None
        return state.applied_gtids


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _seed(endpoint: MySqlEndpoint, table: str, rows: int) -> None:
    execute(endpoint, ConcurrentWriter.DDL.replace("orders", table))
    values = ", ".join(f"({i}, 'c{i}', {i}.5, 'new', NULL, NOW(6))" for i in range(1, rows + 1))
    execute(endpoint, f"INSERT INTO {table} VALUES {values}")


def _writing(endpoint: MySqlEndpoint, seconds: float, seed: int, *tables: str) -> list[ConcurrentWriter]:
    writers = [
        ConcurrentWriter(endpoint, seconds=seconds, seed=seed + n, table=t) for n, t in enumerate(tables)
    ]  # noqa: E501
    for writer in writers:
        writer.start()
    return writers


def _finish(writers: list[ConcurrentWriter]) -> None:
    for writer in writers:
        writer.join()
        assert writer.error is None


def _checkpoint(dag_run) -> dict[str, Any]:
    record = xcom_value(dag_run, "publish_checkpoint")
    assert record["format"] == "airflow-mysql-cdc/checkpoint" and record["version"] == 1
    return record


def _assert_exact(endpoint: MySqlEndpoint, lake: Path, database: str, *tables: str) -> None:
    for table in tables:
        assert_lake_equals_source(endpoint, lake, database, table)
        if not LakeLayout(lake).changelog(database, table).exists():
            continue  # no change reached the table since its snapshot
        entries = [entry[:2] for entry in changelog_entries(lake, database, table)]
        assert len(entries) == len(set(entries)), f"{table}: a change reached the changelog twice"


def test_daily_runs_with_a_concurrent_writer_keep_the_lake_equal_to_the_source(
    mysql_database: MySqlEndpoint,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    database = mysql_database.database
    _seed(mysql_database, "orders", 200)
    _seed(mysql_database, "payments", 150)
    password = "Pipeline-Secret-93q"
    user = create_user(
        mysql_database, "cdc_pipeline", password,
        "REPLICATION SLAVE, REPLICATION CLIENT ON *.*", f"SELECT ON `{database}`.*",
    )  # fmt: skip
    pipeline = Pipeline(monkeypatch, tmp_path, user, [f"{database}.orders", f"{database}.payments"])
    previous_end = None
    for number in range(3):
        # The writer stops before the interval ends; the run tails the binlog until the end passes.
        writers = _writing(mysql_database, 8, 10 * number, "orders", "payments")
        dag_run = pipeline.run(_now() + datetime.timedelta(seconds=9))
        _finish(writers)
        assert task_states(dag_run) == dict.fromkeys(ALL_TASKS, "success")
        record = _checkpoint(dag_run)
        if previous_end is not None:
            assert record["start_gtids"] == previous_end  # the chain: this run starts where the last ended
        assert GtidSet.parse(record["end_gtids"]) == pipeline.lake_position()  # the second witness agrees
        assert record["already_applied"] is False
        _assert_exact(mysql_database, pipeline.lake, database, "orders", "payments")
        previous_end = record["end_gtids"]
    assert xcom_value(dag_run, "snapshot")["tables"] == []  # only the first run snapshots
    output = capfd.readouterr()
    assert "Spark-Submit cmd" in output.out + output.err
    assert password not in output.out + output.err


def _kill_application_after_a_batch(pipeline: Pipeline, before: GtidSet) -> threading.Thread:
    """kill -9 the binlog application once it committed a batch of the segment (a crash mid-run)."""

    def kill() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if pipeline.lake_position() != before:
                    break
            except Exception:  # noqa: BLE001 - the state table may be mid-commit
                pass
            time.sleep(0.2)
        for process in psutil.process_iter(["cmdline"]):
            if any("binlog_to_delta" in part for part in process.info["cmdline"] or ()):
                process.kill()

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    return killer


def test_failed_retried_cleared_and_caught_up_runs_apply_everything_once(
    mysql_database: MySqlEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = mysql_database.database
    _seed(mysql_database, "orders", 120)
    pipeline = Pipeline(monkeypatch, tmp_path, mysql_database.with_database(None), [f"{database}.orders"])
    first_end = _now() + datetime.timedelta(seconds=2)
    assert task_states(pipeline.run(first_end))["publish_checkpoint"] == "success"

    # Run 2 dies in the middle of its segment (kill -9 of the application after a committed batch).
    second_end = _now() + datetime.timedelta(seconds=8)
    writers = _writing(mysql_database, 6, 1, "orders")
    killer = _kill_application_after_a_batch(pipeline, pipeline.lake_position())
    failed = pipeline.run(second_end)
    killer.join()
    _finish(writers)
    assert task_states(failed)["apply_segment"] == "failed"
    assert task_states(failed)["publish_checkpoint"] != "success"
    # The retry (a clear in the UI) finishes the segment from where the lake stopped.
    retried = pipeline.run(second_end)
    assert task_states(retried) == dict.fromkeys(ALL_TASKS, "success")
    second = _checkpoint(retried)
    assert second["already_applied"] is False
    _assert_exact(mysql_database, pipeline.lake, database, "orders")

    # The DAG is "paused" for two intervals while writes go on; three catch-up runs then follow in
    # date order, each cutting the binlog at its own interval end.
    ends = []
    for _ in range(3):
        _finish(_writing(mysql_database, 1.5, 7, "orders"))
        ends.append(_now())
        time.sleep(0.3)
    records = []
    for end in ends:
        dag_run = pipeline.run(end)
        assert task_states(dag_run) == dict.fromkeys(ALL_TASKS, "success")
        records.append(_checkpoint(dag_run))
    chain = [second, *records]
    for earlier, later in zip(chain, chain[1:], strict=False):
        assert later["start_gtids"] == earlier["end_gtids"]
        assert GtidSet.parse(earlier["end_gtids"]) < GtidSet.parse(later["end_gtids"])
    _assert_exact(mysql_database, pipeline.lake, database, "orders")

    # Clearing the old run 2 now reproduces its end set and applies nothing: the lake stays put.
    lake_before = pipeline.lake_position()
    cleared = pipeline.run(second_end)
    assert task_states(cleared) == dict.fromkeys(ALL_TASKS, "success")
    again = _checkpoint(cleared)
    assert (again["start_gtids"], again["end_gtids"]) == (second["start_gtids"], second["end_gtids"])
    assert again["already_applied"] is True
    assert pipeline.lake_position() == lake_before
    _assert_exact(mysql_database, pipeline.lake, database, "orders")
