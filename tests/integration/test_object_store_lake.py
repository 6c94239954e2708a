"""A lake on an object store (``s3://`` on a moto server on loopback), end to end.

The pipeline's single-writer fencing needs a store where, of two writers committing the same
Delta version, exactly one wins: delta-rs 1.x commits with a conditional PUT, which moto (like AWS
S3 and MinIO) honours. The DAG scenario then runs the shipped example DAG against the s3 lake with
its credentials in an ``aws`` Airflow connection, and checks that they appear in no task log, XCom
value, process argument or lake object.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import signal
import subprocess
import threading
import time
from functools import partial
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.state.pipeline_state import (
    RELEASED,
    PipelineFencedError,
    PipelineState,
    PipelineStateStore,
)
from airflow_mysql_cdc.engine.lake.storage import secret_storage_options_to_environment
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.airflow import task_states, xcom_value
from tests.support.apply_process import launch_application
from tests.support.frozen_replica import FrozenReplica
from tests.support.leaks import CommandLineRecorder, as_text, containing, dag_xcom_values
from tests.support.mysql import create_user
from tests.support.object_store import S3Lake
from tests.support.pipeline import (
    ALL_TASKS,
    Pipeline,
    assert_exact,
    assert_exact_at,
    checkpoint,
    finish,
    kill_application_after_a_batch,
    now,
    seed,
    writing,
)
from tests.support.spark_cluster import SparkStandaloneCluster

ROUNDS = 5


def _race(*attempts) -> list[BaseException | None]:
    """Run ``attempts`` in threads released together; each one's exception (None: it succeeded)."""
    outcomes: list[BaseException | None] = [None] * len(attempts)
    barrier = threading.Barrier(len(attempts))

    def run(index: int) -> None:
        barrier.wait()
        try:
            attempts[index]()
        except BaseException as error:  # noqa: BLE001 - the outcome is what the test looks at
            outcomes[index] = error

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(attempts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_two_writers_racing_a_commit_on_s3_exactly_one_wins(s3_lake: S3Lake) -> None:
    """What the fencing relies on: two commits of one version; the store's conditional PUT lets one in.

    Every commit of the pipeline has ``max_commit_retries=0``, as here. With delta-rs's default
    retries, the loser of a ``mode="error"`` creation race retries as version 1 and *also* succeeds
    (measured on deltalake 1.6.6): the retry, not the store, would then break exclusivity.
    """
    options = s3_lake.storage_options
    uri = LakeLayout(s3_lake.root).state
    no_retry = CommitProperties(max_commit_retries=0)

    def create(epoch: int) -> None:
        row = pa.table({"epoch": [epoch]})
        write_deltalake(uri, row, mode="error", storage_options=options, commit_properties=no_retry)

    def overwrite(table: DeltaTable, epoch: int) -> None:
        write_deltalake(table, pa.table({"epoch": [epoch]}), mode="overwrite", commit_properties=no_retry)

    outcomes = _race(lambda: create(1), lambda: create(-1))
    assert sum(outcome is None for outcome in outcomes) == 1, outcomes  # version 0: one creator wins
    for round_number in range(2, ROUNDS + 2):
        first, second = DeltaTable(uri, storage_options=options), DeltaTable(uri, storage_options=options)
        version = first.version()
        outcomes = _race(partial(overwrite, first, round_number), partial(overwrite, second, -round_number))
        losers = [outcome for outcome in outcomes if outcome is not None]
        assert len(losers) == 1 and isinstance(losers[0], CommitFailedError), outcomes
        latest = DeltaTable(uri, storage_options=options)
        assert latest.version() == version + 1
        assert abs(latest.to_pyarrow_table()["epoch"][0].as_py()) == round_number


def test_two_writers_racing_a_claim_on_s3_exactly_one_wins(s3_lake: S3Lake) -> None:
    """Two instances claim the same s3 pipeline at once: afterwards only one of them can commit."""
    uri = LakeLayout(s3_lake.root).state
    for round_number in range(ROUNDS):
        stores = [PipelineStateStore(uri, "raced", s3_lake.storage_options) for _ in range(2)]
        claims: list[PipelineState | None] = [None, None]

        def claim(index: int, stores: list[PipelineStateStore], claims: list, round_number: int) -> None:
            claims[index] = stores[index].claim(f"writer-{index}-{round_number}", GtidSet(), lease_s=0)

        _race(*(partial(claim, index, stores, claims, round_number) for index in range(2)))
        committed = []
        for store, state in zip(stores, claims, strict=True):
            if state is None:
                continue  # lost the claim itself: fenced at start
            with contextlib.suppress(PipelineFencedError):  # a later claim took over: it stops
                committed.append(store.commit(state, GtidSet(), state.batch_seq + 1, release=True))
        assert len(committed) == 1, (round_number, claims)
        final = PipelineStateStore(uri, "raced", s3_lake.storage_options).read()
        assert final is not None and final.epoch == committed[0].epoch and final.owner == RELEASED


def test_a_stale_writer_on_s3_is_fenced_by_its_successors_claim(s3_lake: S3Lake) -> None:
    uri = LakeLayout(s3_lake.root).state
    old, new = (PipelineStateStore(uri, "p", s3_lake.storage_options) for _ in range(2))
    old_state = old.claim("old", GtidSet())
    new.claim("new", GtidSet(), lease_s=0)  # the old one stalled past its lease
    with pytest.raises(PipelineFencedError, match="is being written by another instance"):
        old.commit(old_state, GtidSet(), 1)


def _wait_for_owner(pipeline: Pipeline, timeout_s: float = 90) -> str:
    store = PipelineStateStore(LakeLayout(pipeline.lake).state, "e2e", pipeline.storage_options)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = store.read()
        if state is not None and state.owner != RELEASED:
            return state.owner
        time.sleep(0.3)
    raise AssertionError("the first instance did not claim the pipeline in time")


@pytest.mark.mysql
@pytest.mark.slow
@pytest.mark.xdist_group("spark_standalone")
@pytest.mark.usefixtures("airflow_db")
def test_the_daily_dag_on_a_spark_cluster_and_an_s3_lake_stays_exact_recovers_and_leaks_no_credential(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    s3_lake: S3Lake,
    spark_standalone: SparkStandaloneCluster,
    lean_executor_python: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    """The shipped DAG, configured from its JSON alone, on a standalone cluster of two workers whose
    executors' Python has only the executor requirements (no package, no deltalake, no Airflow):
    snapshot windows and a parallel catch-up's range readers run there, the snapshot's rows are
    written to the S3 lake by the executors, and the lake equals a replica frozen at each end set."""
    database = mysql_database.database
    seed(mysql_database, "orders", 150)
    seed(mysql_database, "payments", 90)
    tables = [f"{database}.orders", f"{database}.payments"]
    source = mysql_database.with_database(None)
    password = "Cluster-S3-Secret-71v"
    reader = create_user(
        mysql_database, "cdc_cluster", password,
        "REPLICATION SLAVE, REPLICATION CLIENT ON *.*", f"SELECT ON `{database}`.*",
    )  # fmt: skip
    pipeline = Pipeline(monkeypatch, tmp_path, reader, tables, s3_lake=s3_lake, catchup_parallelism=2)
    master = {"conn_type": "spark", "host": "spark://127.0.0.1", "port": spark_standalone.master_port}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", json.dumps(master))
    pipeline.configure(
        spark_conn_id="spark_cluster",
        spark={
            "executor_python": str(lean_executor_python),
            "executor_memory": "512m",
            "conf": {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"},
        },
    )
    applications_before = spark_standalone.application_folders()
    read = {"storage_options": pipeline.storage_options}
    secrets = (s3_lake.store.secret_access_key, s3_lake.store.access_key_id)

    def assert_no_worker_file_holds_a_credential() -> None:
        """Issue 34: the executors' copies (a broadcast) are ciphertext, never in a work folder."""
        assert spark_standalone.worker_files_holding(password, *secrets) == []

    with CommandLineRecorder() as recorder:
        # Run 1: snapshot both tables into s3, then stream the open segment while a writer writes.
        writers = writing(mysql_database, 4, 1, "orders", "payments", pause_s=0.003)
        first = pipeline.run(now() + datetime.timedelta(seconds=6))
        assert task_states(first) == dict.fromkeys(ALL_TASKS, "success")
        assert len(xcom_value(first, "replicate", "snapshot")["tables"]) == 2
        assert_no_worker_file_holds_a_credential()
        assert_exact_at(
            frozen_replica, checkpoint(first), pipeline.lake, database, "orders", "payments", **read
        )
        finish(writers)

        # Run 2: the application is kill -9'ed after a committed batch; the retry finishes the segment.
        # Far enough ahead that the application streams batches before it: executors on a loaded
        # cluster took 30 s and more to start, and a segment already past when reading starts is
        # caught up in one wave, one commit at its end, which left the kill nothing to interrupt.
        second_end = now() + datetime.timedelta(seconds=45)
        writers = writing(mysql_database, 5, 2, "orders", "payments", pause_s=0.003)
        killer = kill_application_after_a_batch(pipeline, pipeline.lake_position())
        failed = pipeline.run(second_end)
        killer.join()
        finish(writers)
        assert task_states(failed)["replicate"] == "failed"
        assert_no_worker_file_holds_a_credential()
        retried = pipeline.run(second_end)
        assert task_states(retried) == dict.fromkeys(ALL_TASKS, "success")
        assert_no_worker_file_holds_a_credential()
        assert_exact_at(
            frozen_replica, checkpoint(retried), pipeline.lake, database, "orders", "payments", **read
        )

        # Run 3: a catch-up of a closed interval, read by two GTID-range readers on Spark.
        finish(writing(mysql_database, 2, 3, "orders", "payments"))
        third = pipeline.run(now())
        assert task_states(third) == dict.fromkeys(ALL_TASKS, "success")
        assert_no_worker_file_holds_a_credential()
        assert GtidSet.parse(checkpoint(third)["end_gtids"]) == pipeline.lake_position()
        assert_exact_at(
            frozen_replica, checkpoint(third), pipeline.lake, database, "orders", "payments", **read
        )

        # Run 4 while another instance holds the pipeline: the lease refuses the second writer.
        holder_config = ApplyConfig(
            pipeline_id="e2e", lake_root=s3_lake.root, tables=tuple(tables),
            start_gtids=pipeline.lake_position(), mode="live", batch_max_seconds=0.2, heartbeat_s=0.5,
            storage_options=s3_lake.store.public_options,
        )  # fmt: skip
        holder = launch_application(
            holder_config,
            tmp_path / "holder",
            source,
            secret_storage_options_to_environment(s3_lake.store.secret_options),
        )
        _wait_for_owner(pipeline)
        finish(writing(mysql_database, 1.5, 4, "orders"))
        fourth_end = now()
        refused = pipeline.run(fourth_end)
        assert task_states(refused)["replicate"] == "failed"
        holder.send_signal(signal.SIGTERM)
        _, holder_stderr = holder.communicate(timeout=90)
        assert holder.returncode == 0, holder_stderr.decode()[-2000:]
        fourth = pipeline.run(fourth_end)  # the retry, once the other instance is gone
        assert task_states(fourth) == dict.fromkeys(ALL_TASKS, "success")
        assert_no_worker_file_holds_a_credential()
        assert GtidSet.parse(checkpoint(fourth)["end_gtids"]).issubset(pipeline.lake_position())
        assert_exact(mysql_database, pipeline.lake, database, "orders", "payments", **read)

    output = capfd.readouterr()
    logs = output.out + output.err + holder_stderr.decode()
    assert "a second instance must not write it at the same time" in logs
    assert "parallel catch-up of" in logs and "continuing with the single reader" not in logs  # run 3
    assert "Spark-Submit cmd" in logs and s3_lake.root in logs
    assert containing([logs], password, *secrets) == [], "a credential reached a task log"
    spark_commands = [line for line in logs.splitlines() if "Spark-Submit cmd" in line]
    assert spark_commands and containing(spark_commands, *secrets) == []
    assert any("SparkSubmit" in line or "spark-submit" in line for line in recorder.command_lines)
    assert containing(recorder.command_lines, *secrets) == [], "a lake credential reached a process's argv"
    xcoms = [as_text(value) for value in dag_xcom_values(pipeline.dag_id)]
    assert xcoms and containing(xcoms, *secrets) == [], "a lake credential reached XCom"
    assert s3_lake.objects_containing(*secrets) == [], "a lake credential was written into the lake"
    # The windows and range readers ran on the cluster's executors, in the lean Python
    applications = [a for a in spark_standalone.application_folders() if a not in applications_before]
    executor_logs = "".join(
        log.read_text(errors="replace") for a in applications for log in a.glob("*/stderr")
    )
    assert {a.parent.name for a in applications} == {"worker1", "worker2"}
    assert executor_logs.count("Running task") >= 4
    lean = subprocess.run(
        [str(lean_executor_python), "-c", "import airflow_mysql_cdc"], cwd=tmp_path, capture_output=True
    )
    assert lean.returncode != 0, "the executors' Python must not have the package of its own"
