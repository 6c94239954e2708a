"""The shipped example DAG end to end: real Airflow runs, real MySQL, spark-submit, Delta.

Each test configures ``dags/mysql_cdc_daily.py`` through a JSON file (as a user would), with a
short fixed interval (``every 6s``) so several runs fit in a test; ``dag.test(logical_date=T)``
runs the interval ending at ``T``. Running a date again replaces that run (``dag.test`` deletes
and recreates it): every task runs again with fresh XComs, as after a clear in the UI.
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.state.own_commits import own_commit
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.values.checkpoint import interval_key
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.runs.status import main as status_command
from tests.support.airflow import TaskLogLine, load_dag, task_log, task_states, xcom_value
from tests.support.assets import (
    assert_events_describe,
    assert_record_counts_the_lake,
    assert_versions_continue,
    asset_events,
)
from tests.support.frozen_replica import FrozenReplica
from tests.support.maintenance import history_starts_after_version_zero, maintain_like_another_writer
from tests.support.mysql import create_user, execute
from tests.support.openlineage import completed_events, openlineage_listener_registered, openlineage_on
from tests.support.pipeline import (
    ALL_TASKS,
    Pipeline,
    assert_exact,
    assert_exact_at,
    chain_records,
    checkpoint,
    delta_logs_changed,
    finish,
    kill_application_after_a_batch,
    kill_process_once_started,
    now,
    seed,
    writers_running,
    writing,
)
from tests.support.statsd import statsd_listener

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db"), pytest.mark.slow]


def test_daily_runs_keep_the_lake_exact_through_maintenance_by_another_writer_and_the_built_in_one(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    """Runs while writers write; then another writer maintains every Delta table of the lake with the
    log retention at a second (its commit history is gone); more runs, a table joining, a re-run of an
    old date, a kill -9 inside the built-in maintenance and its retry. After every run the lake equals
    a replica frozen at the published end set, and no table is snapshotted again. Every record counts
    the changelog rows of its transactions (read whole, another way), its version ranges continue its
    predecessor's, and the run's asset events name them (their feeds read back with read_change_feed).

    Every run's resumability task reports the binlog headroom of its checkpoint, warning below the
    configured number of runs. Every run's ``verify_lake`` (the shipped default, ``sample``) compares
    its sample of every table at the run's position, all of it, with writers running. Then a ``full``
    verification fails on a row tampered with in the lake, naming only it, with the message a user
    reads; a one-chunk ``sample`` checks that chunk again first and proves an extra row in its own
    chunk; following the message (``verify_repair``, clear the task) the cleared try repairs exactly
    those keys, though the sample's cursor moved on, and finds the other tables clean."""
    database = mysql_database.database
    seed(mysql_database, "orders", 200)
    values = ", ".join(f"({i}, 'c{i}', {i}.5, 'new', NULL, NOW(6))" for i in range(1001, 1031))
    execute(mysql_database, f"INSERT INTO orders VALUES {values}")  # keys the writers never touch
    seed(mysql_database, "payments", 150)
    password = "Pipeline-Secret-93q"
    user = create_user(
        mysql_database, "cdc_pipeline", password,
        "REPLICATION SLAVE, REPLICATION CLIENT ON *.*", f"SELECT ON `{database}`.*",
    )  # fmt: skip
    tables = ["orders", "payments"]
    # One hour of binlogs (stated, as on Cloud SQL), against 1000 runs of 6 s: below the threshold.
    pipeline = Pipeline(
        monkeypatch, tmp_path, user, [f"{database}.{name}" for name in tables],
        maintenance={"interval_hours": 0, "small_files": 2},
        binlog_retention_hours=1, retention_headroom_runs=1000, verify=None,  # the shipped default
    )  # fmt: skip
    records: list[dict] = []

    def run(writing_tables: tuple[str, ...], verify: str = "success", exact: bool = True) -> dict:
        # The writers go on past the interval end: the run tails the binlog until the end passes,
        # and the lake is compared with the source as of the published end set while they write.
        writers = writing(mysql_database, 9, len(records) * 10, *writing_tables, pause_s=0.003)
        dag_run = pipeline.run(now() + datetime.timedelta(seconds=6))
        finish(writers)
        assert task_states(dag_run) == dict.fromkeys(TASKS, "success") | {"verify_lake": verify}
        if verify == "success":
            assert_every_table_compared_in_full(xcom_value(dag_run, "verify_lake"), tables, database)
        record = checkpoint(dag_run)
        if records:
            assert record["start_gtids"] == records[-1]["end_gtids"]  # the chain goes on where it was
        assert GtidSet.parse(record["end_gtids"]) == pipeline.lake_position()  # the second witness
        if exact:
            assert_exact_at(frozen_replica, record, pipeline.lake, database, *tables)
        # The record's counts are the lake's; the run's asset events name them and read back exactly.
        assert_record_counts_the_lake(record)
        assert_events_describe(asset_events(dag_run.dag_id, dag_run.run_id), record, dag_run.run_id)
        records.append(record)
        return dag_run

    # The first run with Airflow's metrics sent to a StatsD listener and OpenLineage on (file transport).
    events_file = tmp_path / "openlineage.jsonl"
    with (
        statsd_listener(monkeypatch) as statsd,
        openlineage_on(monkeypatch, {"type": "file", "log_file_path": str(events_file), "append": True}),
        openlineage_listener_registered(),
    ):
        first = run(("orders", "payments"))
        (replicated,) = completed_events(events_file, f"{pipeline.dag_id}.replicate")
        (maintained,) = completed_events(events_file, f"{pipeline.dag_id}.maintain_lake")
    first_log = capfd.readouterr()
    assert_short_and_honest(task_log(first_log.out + first_log.err, "replicate"), password)
    # The "Run record" extra link the task instance pushed opens its XCom tab, where the record is.
    assert xcom_value(first, "replicate", "_link_MySqlCdcRunRecordLink").endswith(
        f"/dags/{first.dag_id}/runs/{quote(first.run_id, safe='')}/tasks/replicate/xcom"
    )
    snapshotted = xcom_value(first, "replicate", "snapshot")["tables"]
    assert {table["table"] for table in snapshotted} == {f"{database}.orders", f"{database}.payments"}
    source = f"mysql://{mysql_database.host}:{mysql_database.port}"
    assert sorted((d["namespace"], d["name"]) for d in replicated["inputs"]) == [
        (source, f"{database}.orders"), (source, f"{database}.payments"),
    ]  # fmt: skip
    lake_tables = {
        f"{pipeline.lake}{part}/{database}/{name}" for part in ("", "/_changelog") for name in tables
    }
    assert {d["name"] for d in replicated["outputs"]} == lake_tables
    assert {d["name"] for d in maintained["outputs"]} == lake_tables
    for output in replicated["outputs"]:
        table = f"{database}.{output['name'].rsplit('/', 1)[1]}"
        applied = records[0]["tables"][table]["rows_applied"]
        assert output["outputFacets"]["outputStatistics"]["rowCount"] == applied
    assert password not in events_file.read_text()
    for table in snapshotted:
        name = table["table"].replace(".", "__")
        assert statsd.values(f"airflow.mysql_cdc.snapshot.rows.{name}") == [f"{table['rows']}|c"]
        assert statsd.values(f"airflow.mysql_cdc.apply.rows.e2e.{name}") == [
            f"{records[0]['tables'][table['table']]['rows_applied']}|c"
        ]
    assert statsd.values(f"airflow.mysql_cdc.maintenance.files_after.e2e.{database}__orders.target")
    for name in tables:  # how much of each table the default verification compared: all it sampled
        assert statsd.values(f"airflow.mysql_cdc.verify.coverage.e2e.{database}__{name}") == ["1.0|g"]
    summary = task_log(first_log.out + first_log.err, "verify_lake")[-1].message
    assert summary.startswith("Summary: verify (sample) at "), summary
    assert f"{database}.orders clean (" in summary and "rows compared, 100%)" in summary
    assert "NOT FULLY CHECKED" not in summary
    first_story = {key: xcom_value(first, "replicate", key) for key in ("plan", "snapshot", "applied")}
    assert xcom_value(first, "maintain_lake")["files_after"] > 0  # the built-in maintenance ran
    assert xcom_value(first, "resumability")["verdict"] == "first_run"  # nothing to look ahead of yet
    # The extra links the finished tasks pushed (what the UI's buttons open): the lake; no Spark UI,
    # which the pipeline leaves off.
    assert xcom_value(first, "replicate", "_link_MySqlCdcLakeLocationLink") == f"file://{pipeline.lake}"
    assert xcom_value(first, "maintain_lake", "_link_MySqlCdcLakeLocationLink") == f"file://{pipeline.lake}"
    assert xcom_value(first, "replicate", "_link_MySqlCdcSparkUiLink") == ""
    second = run(("orders", "payments"))
    looked_ahead = xcom_value(second, "resumability")
    headroom = looked_ahead["headroom"]
    assert headroom["level"] == "low" and headroom["threshold_s"] == 6000
    assert 3000 < headroom["headroom_s"] <= 3600
    assert headroom["retention"]["source"].startswith("binlog_retention_hours in the pipeline configuration")
    assert headroom["to_change"] == "SET PERSIST binlog_expire_logs_seconds = 7200;"
    assert looked_ahead["staleness"]["behind_s"] is not None  # the server moved on since the first run
    members = LakeState(pipeline.lake, "e2e").pipeline().members

    maintain_like_another_writer(Path(pipeline.lake))
    assert history_starts_after_version_zero(LakeLayout(pipeline.lake).target(database, "orders"))
    third = run(("orders", "payments"))
    assert xcom_value(third, "replicate", "snapshot")["tables"] == []  # nothing snapshotted again
    assert LakeState(pipeline.lake, "e2e").pipeline().members == members

    seed(mysql_database, "refunds", 80)  # a table joins the running pipeline
    tables.append("refunds")
    pipeline.configure(tables=[f"{database}.{name}" for name in tables])
    joined = run(("orders", "payments", "refunds"))
    assert [table["table"] for table in xcom_value(joined, "replicate", "snapshot")["tables"]] == [
        f"{database}.refunds"
    ]

    # A re-run of an old date (the first run's, cleared: its XComs are gone) republishes its record,
    # applies nothing, and pushes the run's story again: the plan, the snapshot it took, what it applied.
    lake_before = pipeline.lake_position()
    rerun = pipeline.run(datetime.datetime.fromisoformat(records[0]["segment_end"]))
    assert task_states(rerun) == dict.fromkeys(TASKS, "success")
    assert checkpoint(rerun) == records[0] and pipeline.lake_position() == lake_before
    assert {key: xcom_value(rerun, "replicate", key) for key in first_story} == first_story
    assert xcom_value(rerun, "replicate", "snapshot")["tables"] == snapshotted
    until_rerun = capfd.readouterr()
    rerun_log = task_log(until_rerun.out + until_rerun.err, "replicate")
    assert rerun_log[-1].message.startswith("Summary: nothing applied: a re-run of the interval ending")
    assert any(line.message.startswith("pushed again from the record of run") for line in rerun_log)
    del second

    # kill -9 of the built-in maintenance, then its retry (a clear of the task): the lake stays exact.
    killer = kill_process_once_started("maintain_lake", progress=lambda: delta_logs_changed(pipeline.lake))
    killed = pipeline.run(now() + datetime.timedelta(seconds=6))
    killer.join()
    assert task_states(killed)["replicate"] == "success" and task_states(killed)["maintain_lake"] == "failed"
    assert killer.killed
    killed_record = checkpoint(killed)
    assert_exact_at(frozen_replica, killed_record, pipeline.lake, database, *tables)
    retried = pipeline.run(datetime.datetime.fromisoformat(killed_record["segment_end"]))
    assert task_states(retried) == dict.fromkeys(TASKS, "success")
    assert checkpoint(retried) == killed_record
    records.append(killed_record)
    shown = capfd.readouterr()
    output = until_rerun.out + until_rerun.err + shown.out + shown.err
    assert "Spark-Submit cmd" in output and password not in output
    # Forward runs, a re-run and a retry: none suspects a failed attempt, none says nothing failed.
    assert "ahead of the checkpoint" not in output and "no previous successful run" not in output
    assert f"its binlog file {headroom['needed_file']}" in output
    assert "That is less than 1000 schedule intervals (1 h 40 min)" in output

    # A full verify_lake at the run's end set while writers write: a row tampered with in the lake
    # fails the task naming it, and only it (the run's record is published: the data path did its part).
    pipeline.configure(verify="full", verify_max_examples=3)
    # Marked as the pipeline's own commit, as a wrong commit of its own would be: another writer's
    # change is stopped at the next run's start already (tests/integration/test_outside_changes.py).
    tampered = DeltaTable(LakeLayout(pipeline.lake).target(database, "orders"))
    tampered.update(
        predicate="id = 1017",
        updates={"customer": "'tampered'"},
        commit_properties=own_commit(None, tampered),
    )
    run(("orders", "payments", "refunds"), verify="failed", exact=False)
    shown = capfd.readouterr()
    output = shown.out + shown.err
    assert "the lake differs from the source at the pipeline's position" in output
    assert f"- {database}.orders: 0 missing, 0 extra, 1 differing of" in output
    assert "id=1017: differs in customer" in output and '"verify_repair": true' in output
    assert "in 1 table(s)" in output  # writers ran on all three: no other difference was claimed
    assert password not in output

    # The default, a sample (of one chunk here, which the full verification left at the first key):
    # it checks the chunk that proved 1017 again first, and proves a row no source ever had in its own.
    pipeline.configure(verify=None, verify_sample_chunks=1)
    target = DeltaTable(LakeLayout(pipeline.lake).target(database, "orders"))  # as the run left it
    rows = target.to_pyarrow_table()
    ghost = rows.filter(pc.equal(rows.column("id"), 1017))
    ghost = ghost.set_column(ghost.schema.get_field_index("id"), "id", pa.array([-17], pa.int32()))
    write_deltalake(target, ghost, mode="append", commit_properties=own_commit(None, target))  # as above
    failed = run(("orders", "payments", "refunds"), verify="failed", exact=False)
    output = _output(capfd)
    assert f"- {database}.orders: 0 missing, 1 extra, 1 differing of" in output
    assert "id=-17: extra in the lake" in output and "id=1017: differs in customer" in output
    # Following its message: verify_repair, and clear the task. The cleared try is at the same
    # position (the run applies nothing again) and repairs exactly what the failed try proved, though
    # the sample's cursor moved on (before, it sampled the next chunk, went green, left both wrong).
    pipeline.configure(verify_repair=True)
    cleared = pipeline.run(failed.logical_date)
    assert task_states(cleared) == dict.fromkeys(TASKS, "success")
    assert checkpoint(cleared) == records[-1]
    verified = xcom_value(cleared, "verify_lake")
    assert verified["position"] == records[-1]["end_gtids"]
    outcomes = {result["table"]: result for result in verified["tables"]}
    orders = outcomes[f"{database}.orders"]
    assert orders["status"] == "repaired" and orders["rechecked"] == 2, orders
    assert (orders["repair"]["upserted"], orders["repair"]["deleted"]) == (1, 1)
    assert orders["repair"]["outcome"] == "equal to the source"
    assert {outcomes[f"{database}.{name}"]["status"] for name in ("payments", "refunds")} == {"clean"}
    assert_exact_at(frozen_replica, records[-1], pipeline.lake, database, *tables)

    final_members = LakeState(pipeline.lake, "e2e").pipeline().members
    assert {name: final_members[name] for name in members} == members  # no table snapshotted again
    assert [record["run_id"] for record in chain_records(pipeline.lake)] == [r["run_id"] for r in records]
    assert_versions_continue(records)

    # `airflow-mysql-cdc status` shows this chain and every table's state from the lake alone.
    capfd.readouterr()
    assert (
        status_command(["status", "--lake-root", str(pipeline.lake), "--pipeline-id", "e2e", "--last", "2"])
        == 0
    )
    shown = capfd.readouterr().out
    assert f"position (applied GTID set): {pipeline.lake_position()}" in shown
    assert f"Chain: {len(records)} record(s), the last 2:" in shown
    assert f"run {records[-1]['run_id']}" in shown and f"    end set: {records[-1]['end_gtids']}" in shown
    for name in tables:
        snapshot_id = final_members[f"{database}.{name}"]
        assert f"  {database}.{name}: member (joined with snapshot {snapshot_id})" in shown
        assert f"    snapshot: {snapshot_id}, " in shown
    assert shown.count("    target: version ") == len(tables)
    assert shown.count("    changelog: ") == len(tables)  # "none" for a table no change reached yet


TASKS = (*ALL_TASKS, "verify_lake")
"""The shipped DAG's tasks with the shipped default, ``verify: sample``."""


def assert_every_table_compared_in_full(result: dict, tables: list[str], database: str) -> None:
    """The run's verification compared every table, all of what it checked (nothing left out)."""
    compared = {table["table"]: table for table in result["tables"]}
    assert sorted(compared) == sorted(f"{database}.{name}" for name in tables)
    for table in compared.values():
        assert table["status"] in ("clean", "repaired") and table["coverage"] == 1.0, table


def _output(capfd: pytest.CaptureFixture) -> str:
    shown = capfd.readouterr()
    return shown.out + shown.err


FIRST_RUN_LOG_LINES = 40
"""The first run's replicate log, tables snapshotted and a segment applied. One table: 24 lines
(measured in test_failed_retried_cleared_and_caught_up_runs_apply_everything_once, 2 of them Spark's
WARN lines per application); each more table adds about 3 (plan, done, its line), a 30 s progress
line or two on a slow machine. Issue 26 counted 98, 61 of them Spark's start-up chatter."""


def assert_short_and_honest(
    lines: list[TaskLogLine], password: str, limit: int = FIRST_RUN_LOG_LINES
) -> None:
    """The first run's replicate log: short, no false alarm, no Spark INFO chatter, the summary last."""
    text = "\n".join(line.message for line in lines)
    assert len(lines) <= limit, text
    assert "ahead of the checkpoint" not in text and "no previous successful run" not in text
    assert "the pipeline's first record: the lake at" in text
    chatter = [line for line in lines if " INFO " in line.message and "airflow_mysql_cdc" not in line.message]
    assert chatter == [], text
    assert "INFO SparkContext" not in text and "py4j" not in text
    assert {line.level for line in lines if " WARN " in line.message} <= {"warning"}  # Spark's: warnings
    assert lines[-1].message.startswith("Summary: "), text
    assert [line for line in lines if line.message.startswith("Summary: ")] == [lines[-1]]
    assert not password or password not in text


def test_failed_retried_cleared_and_caught_up_runs_apply_everything_once(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    database = mysql_database.database
    seed(mysql_database, "orders", 120)
    pipeline = Pipeline(monkeypatch, tmp_path, mysql_database.with_database(None), [f"{database}.orders"])
    first_end = now() + datetime.timedelta(seconds=2)
    first = pipeline.run(first_end)
    assert task_states(first)["replicate"] == "success"
    first_log = capfd.readouterr()
    assert_short_and_honest(task_log(first_log.out + first_log.err, "replicate"), "", limit=30)
    assert_exact_at(frozen_replica, checkpoint(first), pipeline.lake, database, "orders")

    # Run 2 dies in the middle of its segment (kill -9 of the application after a committed batch),
    # while it tails the binlog live towards an interval end in the future, and while a writer goes on
    # until the kill: so however late the application starts on a loaded machine, the segment has
    # changes after its first batch, which the retry must apply. (A writer of fixed length could end
    # before a slow start; the first batch then took everything and the retry had nothing to do.)
    second_end = now() + datetime.timedelta(seconds=30)
    with writers_running(mysql_database, 1, "orders", pause_s=0.005):
        killer = kill_application_after_a_batch(pipeline, pipeline.lake_position())
        failed = pipeline.run(second_end)
        killer.join()
    assert task_states(failed)["replicate"] == "failed"
    # The retry (a clear in the UI) finishes the segment from where the lake stopped.
    retried = pipeline.run(second_end)
    assert task_states(retried) == dict.fromkeys(ALL_TASKS, "success")
    second = checkpoint(retried)
    assert second["already_applied"] is False
    second_story = {key: xcom_value(retried, "replicate", key) for key in ("plan", "snapshot", "applied")}
    # The retry says what happened: the failed attempt applied part of the segment; after its own
    # apply it says the lake holds its segment, suspecting nobody.
    retry_log = [line.message for line in task_log(_output(capfd), "replicate")]
    ahead = [line for line in retry_log if "ahead of the checkpoint" in line]
    assert len(ahead) == 1 and "applied by an attempt that failed before it published a record" in ahead[0]
    assert any(
        line.startswith("checkpoint: the lake holds the checkpoint and this run's segment")
        for line in retry_log
    )
    assert retry_log[-1].startswith("Summary: ")
    assert second_story["applied"]["transactions"] > 0
    assert_exact_at(frozen_replica, second, pipeline.lake, database, "orders")

    # The DAG is "paused" for two intervals while writes go on; then their runs go in date order, as
    # the scheduler sends queued runs. The first starts more than one interval (6 s) late: it catches
    # the whole backlog up, to the time it starts; the second finds its interval covered and skips
    # Spark. (Runs going out of order, a failed run cleared later: test_pipeline_under_the_scheduler.)
    ends = []
    for _ in range(2):
        finish(writing(mysql_database, 1.5, 7, "orders"))
        ends.append(now())
        time.sleep(0.3)
    time.sleep(7)  # more than one interval (6 s) passes before the queued runs start
    catching_up = pipeline.run(ends[0])
    assert task_states(catching_up) == dict.fromkeys(ALL_TASKS, "success")
    later = checkpoint(catching_up)
    assert (later["start_gtids"], later["previous_run_id"]) == (second["end_gtids"], second["run_id"])
    assert later["segment_start"] == second["segment_end"]
    assert datetime.datetime.fromisoformat(later["segment_end"]) > ends[1]
    assert_exact_at(frozen_replica, later, pipeline.lake, database, "orders")
    lake_before = pipeline.lake_position()
    capfd.readouterr()
    covered = pipeline.run(ends[1])
    # Nothing moved: no maintenance or verification process starts, the grid shows them skipped.
    assert task_states(covered) == dict.fromkeys(ALL_TASKS, "success") | {"maintain_lake": "skipped"}
    covered_log = [line.message for line in task_log(_output(capfd), "replicate")]
    skipped = "skipped: maintain_lake: the lake's position did not move"
    assert any(line.startswith(skipped) for line in covered_log)
    assert covered_log[-1].startswith("Summary: nothing applied: ")
    assert checkpoint(covered) == later
    assert xcom_value(covered, "replicate", "applied") is None  # no Spark application ran
    assert pipeline.lake_position() == lake_before
    assert_exact(mysql_database, pipeline.lake, database, "orders")  # and equal now: nothing after it

    # Clearing the old run 2 republishes its record as it was (rows applied included): no rewrite;
    # and its XComs as they were: the plan, the snapshot and the application's result.
    cleared = pipeline.run(second_end)
    rerun = interval_key(second["segment_end"]) == interval_key(second_end)
    upkeep = "success" if rerun else "skipped"  # a re-run checks again; a covered run has nothing to
    assert task_states(cleared) == dict.fromkeys(ALL_TASKS, "success") | {"maintain_lake": upkeep}
    assert checkpoint(cleared) == second
    story = {key: xcom_value(cleared, "replicate", key) for key in second_story}
    if rerun:
        assert story == second_story  # a re-run of run 2's interval: its story is pushed again
    else:  # the retry started late (a loaded machine) and caught the backlog up: the clear is covered
        assert story == dict.fromkeys(second_story)  # by another run (dag.test gives it a new run id)
    assert pipeline.lake_position() == lake_before
    assert chain_records(pipeline.lake) == [checkpoint(first), second, later]

    # A run dated before the pipeline's first interval is refused, saying from where to backfill: it
    # ends skipped (not red in the grid), and so do the tasks after load_checkpoint.
    capfd.readouterr()
    before = pipeline.run(first_end - datetime.timedelta(seconds=30))
    assert task_states(before) == {
        **dict.fromkeys(ALL_TASKS, "skipped"), "check_prerequisites": "success",
    }  # fmt: skip
    assert str(before.state) == "success"
    assert pipeline.lake_position() == lake_before
    output = capfd.readouterr()
    assert "before the pipeline's first interval" in output.out + output.err
    assert f"--from-date {checkpoint(first)['segment_end']}" in output.out + output.err


def test_a_manual_run_without_a_logical_date_is_refused_with_an_explanation(
    mysql_database: MySqlEndpoint,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    database = mysql_database.database
    seed(mysql_database, "orders", 5)
    pipeline = Pipeline(monkeypatch, tmp_path, mysql_database.with_database(None), [f"{database}.orders"])
    dag_run = load_dag("pipeline_daily.py", pipeline.dag_id).test(logical_date=None)
    states = task_states(dag_run)
    assert states["load_checkpoint"] == "failed"
    assert states["replicate"] == "upstream_failed"
    output = capfd.readouterr()
    assert "this run has no logical date, so it has no place in the checkpoint" in output.out + output.err
