"""Run the shipped example DAG in tests: a configured copy per test, its writers, its checks."""

from __future__ import annotations

import contextlib
import datetime
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from airflow_mysql_cdc.engine.lake.layout import LakeLayout, LakeRoot
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineStateStore
from airflow_mysql_cdc.engine.lake.storage import lake_table_exists
from airflow_mysql_cdc.engine.values.checkpoint import VERSION as RECORD_VERSION
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.airflow import connection_env, run_dag, xcom_value
from tests.support.frozen_replica import FrozenReplica
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source, changelog_entries
from tests.support.mysql import execute
from tests.support.object_store import S3Lake

DAG_FILE = "pipeline_daily.py"
ALL_TASKS = (
    "check_prerequisites", "load_checkpoint", "resumability", "replicate", "maintain_lake",
)  # fmt: skip
SPARK_LOCAL = json.dumps({"conn_type": "spark", "host": "local[2]"})
LAKE_CONN_ID = "lake_s3"


class Pipeline:
    """One configured copy of the example DAG, with its own DAG id, lake and connection.

    The lake is local (``workdir/lake``), or ``s3_lake``: an object-store location whose public
    options go into the configuration and whose credentials into an ``aws`` connection
    (``lake_conn_id``), as a user would set it up.
    """

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        workdir: Path,
        source: MySqlEndpoint,
        tables: list[str],
        *,
        s3_lake: S3Lake | None = None,
        **overrides: Any,
    ) -> None:
        self.monkeypatch = monkeypatch
        self.dag_id = f"pipeline_{uuid.uuid4().hex[:10]}"
        self.lake: LakeRoot = s3_lake.root if s3_lake else workdir / "lake"
        self.storage_options = s3_lake.storage_options if s3_lake else None
        """Everything the test's own reads of the lake need, credentials included."""
        self.config_file = workdir / "pipeline.json"
        lake_settings: dict[str, Any] = {"lake_root": str(self.lake)}
        if s3_lake:
            lake_settings |= {"storage_options": s3_lake.store.public_options, "lake_conn_id": LAKE_CONN_ID}
            monkeypatch.setenv(f"AIRFLOW_CONN_{LAKE_CONN_ID.upper()}", s3_lake.store.aws_connection())
        # verify off unless a test asks (``verify=None``: the shipped default, sample): every other
        # DAG test would pay a verify_lake task per run for nothing it checks (the suite's budget).
        self.config = {
            "dag_id": self.dag_id, "pipeline_id": "e2e", "mysql_cdc_conn_id": "cdc_source",
            "spark_conn_id": "spark_local", "tables": tables, **lake_settings,
            "schedule": "every 6s", "start_date": "2026-01-01T00:00:00+00:00", "chunk_size": 60,
            "retries": 0, "sensor_mode": "poke", "sensor_poke_interval_s": 1,
            "resumability_timeout_s": 40, "batch_max_seconds": 0.3, "verify": "off",
        } | overrides  # fmt: skip
        self.configure()
        self.point_at(source)
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", SPARK_LOCAL)

    def configure(self, **changes: Any) -> None:
        """Change the configuration file; a value of None removes the key (the shipped default)."""
        self.config = {key: value for key, value in (self.config | changes).items() if value is not None}
        self.config_file.write_text(json.dumps(self.config))
        self.monkeypatch.setenv("AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG", str(self.config_file))

    def point_at(self, source: MySqlEndpoint, server_id: int = 7301) -> None:
        """What a user does in the UI: edit the connection (e.g. to the promoted replica)."""
        self.monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", connection_env(source, server_id=server_id))

    def run(self, interval_end: datetime.datetime, conf: dict[str, Any] | None = None):
        """``dag.test`` of the run of the interval ending at ``interval_end``, triggered with ``conf``."""
        return run_dag(DAG_FILE, self.dag_id, conf, logical_date=interval_end)

    def lake_position(self) -> GtidSet:
        state = PipelineStateStore(LakeLayout(self.lake).state, "e2e", self.storage_options).read()
        assert state is not None
        return state.applied_gtids


def kill_application_after_a_batch(pipeline: Pipeline, before: GtidSet) -> threading.Thread:
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
        # Only this test's own application: dag.test runs the task in this process, so it is a child.
        for process in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess, psutil.ZombieProcess):
                if any("binlog_to_delta" in part for part in process.cmdline()):
                    process.kill()

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    return killer


class _Killer(threading.Thread):
    def __init__(self, marker: str, progress: Callable[[], Callable[[], bool]]) -> None:
        super().__init__(daemon=True)
        self.marker, self.progress, self.killed = marker, progress, False

    def run(self) -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not self.killed:
            for process in psutil.Process().children(recursive=True):
                with contextlib.suppress(psutil.NoSuchProcess, psutil.ZombieProcess):
                    if any(self.marker in part for part in process.cmdline()):
                        self._kill_when_ready(process)
                        return
            time.sleep(0.05)

    def _kill_when_ready(self, process: psutil.Process) -> None:
        made_progress = self.progress()  # armed now: what the process does from its start on
        while process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
            if made_progress():
                process.kill()
                self.killed = True
                return
            time.sleep(0.01)


def kill_process_once_started(marker: str, *, progress: Callable[[], Callable[[], bool]]) -> _Killer:
    """kill -9 this test's child process whose command line holds ``marker`` once it made progress.

    ``progress()`` is called when the process is found and returns what tells that it got somewhere
    (not a delay: a fast process would finish first and the test would prove nothing); if the
    process ends before that, ``killed`` stays False."""
    killer = _Killer(marker, progress)
    killer.start()
    return killer


def delta_logs_changed(lake: Path) -> Callable[[], bool]:
    """Whether a file of any Delta log under ``lake`` was added or removed since this call (a commit,
    a checkpoint or a log clean-up: a step of the lake's maintenance done)."""

    def listing() -> set[Path]:
        return {path for log in lake.rglob("_delta_log") for path in log.iterdir()}

    before = listing()

    def changed() -> bool:
        try:
            return listing() != before
        except FileNotFoundError:  # a log file removed while listed: a change
            return True

    return changed


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def seed(endpoint: MySqlEndpoint, table: str, rows: int) -> None:
    execute(endpoint, ConcurrentWriter.DDL.replace("orders", table))
    values = ", ".join(f"({i}, 'c{i}', {i}.5, 'new', NULL, NOW(6))" for i in range(1, rows + 1))
    execute(endpoint, f"INSERT INTO {table} VALUES {values}")


def writing(
    endpoint: MySqlEndpoint, seconds: float | None, first_seed: int, *tables: str, pause_s: float = 0.0
) -> list[ConcurrentWriter]:
    """Writers on ``tables`` for ``seconds`` (None: until stopped), ``pause_s`` between transactions."""
    writers = [
        ConcurrentWriter(endpoint, seconds=seconds, seed=first_seed + number, table=table, pause_s=pause_s)
        for number, table in enumerate(tables)
    ]
    for writer in writers:
        writer.start()
    return writers


def finish(writers: list[ConcurrentWriter]) -> None:
    for writer in writers:
        writer.join()
        assert writer.error is None, f"writer on {writer.table} failed: {writer.error!r}"


@contextlib.contextmanager
def writers_running(
    endpoint: MySqlEndpoint, first_seed: int, *tables: str, pause_s: float = 0.0
) -> Iterator[list[ConcurrentWriter]]:
    """Writers on ``tables`` for as long as the block runs (however slow the machine is)."""
    writers = writing(endpoint, None, first_seed, *tables, pause_s=pause_s)
    try:
        yield writers
    finally:
        for writer in writers:
            writer.stop()
    finish(writers)


def checkpoint(dag_run) -> dict[str, Any]:
    record = xcom_value(dag_run, "replicate")
    assert record["format"] == "airflow-mysql-cdc/checkpoint" and record["version"] == RECORD_VERSION
    return record


def assert_exact(
    endpoint: MySqlEndpoint,
    lake: LakeRoot,
    database: str,
    *tables: str,
    storage_options: dict[str, str] | None = None,
) -> None:
    """The lake equals the source *now* (writers stopped) and no change reached a changelog twice."""
    for table in tables:
        assert_lake_equals_source(endpoint, lake, database, table, storage_options)
    assert_changelogs_hold_each_change_once(lake, database, *tables, storage_options=storage_options)


def assert_exact_at(
    replica: FrozenReplica,
    record: dict[str, Any],
    lake: LakeRoot,
    database: str,
    *tables: str,
    storage_options: dict[str, str] | None = None,
) -> None:
    """The lake equals the source as of the run's published end set (writers may still run)."""
    replica.assert_lake_equals(record["end_gtids"], lake, database, tables, storage_options)
    assert_changelogs_hold_each_change_once(lake, database, *tables, storage_options=storage_options)


def chain_records(lake: LakeRoot, pipeline_id: str = "e2e", storage_options=None) -> list[dict[str, Any]]:
    """The lake's checkpoint log, after checking every record continues the one before it."""
    from airflow_mysql_cdc.engine.lake.checkpoint_log import CheckpointLog

    records = [record.to_dict() for record in CheckpointLog(lake, pipeline_id, storage_options).records()]
    for earlier, later in zip(records, records[1:], strict=False):
        assert later["previous_run_id"] == earlier["run_id"], (
            f"{later['run_id']} does not continue {earlier['run_id']}"
        )
        assert later["start_gtids"] == earlier["end_gtids"]
        assert later["segment_start"] == earlier["segment_end"]
        assert GtidSet.parse(earlier["end_gtids"]).issubset(GtidSet.parse(later["end_gtids"]))
    if records:
        assert records[0]["previous_run_id"] is None
    return records


def assert_changelogs_hold_each_change_once(
    lake: LakeRoot, database: str, *tables: str, storage_options: dict[str, str] | None = None
) -> None:
    for table in tables:
        if not lake_table_exists(LakeLayout(lake).changelog(database, table), storage_options):
            continue  # no change reached the table since its snapshot
        entries = [entry[:2] for entry in changelog_entries(lake, database, table, storage_options)]
        assert len(entries) == len(set(entries)), f"{table}: a change reached the changelog twice"
