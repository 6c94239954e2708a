"""The shipped pipeline DAG under a real scheduler, driven as a user drives it from the UI.

A real Airflow (scheduler, dag-processor, triggerer, api-server; LocalExecutor on PostgreSQL) runs
the DAG built by ``build_pipeline_dag`` while a writer changes two tables without pause. Every step
goes through the REST API: a run killed mid-apply and the next run going on without it (no
deadlock) before the failed run is cleared; "clear only failed" after a failed apply; "mark run
failed" during the apply, then "clear only failed"; a backfill over existing runs reprocessing
completed ones; a backfill before the first run. After each step the lake equals the source as of
the chain's latest end set (a replica stopped exactly there), every record in the lake's log
continues the one before it, and no record was ever rewritten.

The DAG runs daily from 23 hours ago (``catchup`` on): the scheduler creates one run by itself, for
the latest point of the schedule, which is the pipeline's first run; every later run is one the test
triggers (dated now) or backfills (at the schedule's daily points before it).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import psutil
import pytest

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.support.airflow_deployment import AirflowDeployment
from tests.support.airflow_rest import AirflowRestClient
from tests.support.frozen_replica import FrozenReplica
from tests.support.pipeline import (
    assert_changelogs_hold_each_change_once,
    chain_records,
    seed,
    writers_running,
)
from tests.support.pipeline import now as utc_now
from tests.support.statsd import StatsdListener

pytestmark = [
    pytest.mark.scheduler,
    pytest.mark.mysql,
    pytest.mark.slow,
    pytest.mark.xdist_group("airflow_deployment"),
]

DAY, HOUR = datetime.timedelta(days=1), datetime.timedelta(hours=1)
DAG_SOURCE = """
import json
from airflow_mysql_cdc.pipeline.dag import build_pipeline_dag
from airflow_mysql_cdc.pipeline.config import PipelineConfig

dag = build_pipeline_dag(PipelineConfig.from_dict(json.loads({config!r})))
"""


class Pipeline:
    """The DAG in the deployment, its lake, and the steps a user takes."""

    def __init__(self, deployment: AirflowDeployment, api: AirflowRestClient, source: MySqlEndpoint,
                 tables: list[str], lake: Path, *, schedule: str = "every 1d",
                 age: datetime.timedelta = DAY - HOUR, verify: str = "off") -> None:  # fmt: skip
        suffix = uuid.uuid4().hex[:8]
        self.api, self.lake = api, lake
        self.dag_id, self.pipeline_id = f"sched_{suffix}", f"sched_{suffix}"
        self.start = utc_now().replace(microsecond=0) - age
        api.create_connection(
            f"src_{suffix}", "mysql_cdc", host=source.host, port=source.port, login=source.user,
            password=source.password or "", extra={"server_id": 7400},
        )  # fmt: skip
        api.create_connection(f"spark_{suffix}", "spark", host="local[2]")
        config = {
            "dag_id": self.dag_id, "pipeline_id": self.pipeline_id, "mysql_cdc_conn_id": f"src_{suffix}",
            "spark_conn_id": f"spark_{suffix}", "tables": tables, "lake_root": str(lake),
            "schedule": schedule, "start_date": self.start.isoformat(), "catchup": True,
            "chunk_size": 60, "retries": 0, "sensor_mode": "poke", "sensor_poke_interval_s": 1,
            "resumability_timeout_s": 60, "batch_max_seconds": 0.3,
            "verify": verify,  # off by default: the daily test runs the shipped sample; here, runs and clears
        }  # fmt: skip
        deployment.write_dag_file(f"{self.dag_id}.py", DAG_SOURCE.format(config=json.dumps(config)))
        api.wait_for_dag(self.dag_id, file_name=f"{self.dag_id}.py")
        api.unpause(self.dag_id)

    def scheduled_first_run(self):
        """The run the scheduler made by itself when the DAG was unpaused: the pipeline's first."""
        deadline = time.monotonic() + 120
        while not (runs := self.api.dag_runs(self.dag_id, run_types=["scheduled"])):
            assert time.monotonic() < deadline, "the scheduler made no run for the schedule's latest point"
            time.sleep(1)
        [run] = runs
        assert run.logical_date == self.start
        return run

    def trigger_now(self, conf: dict | None = None):
        """A manual run of the interval ending now (the UI's trigger form, dated now), with ``conf``."""
        time.sleep(1)  # a fresh date: runs are identified by it
        return self.api.trigger_run(self.dag_id, utc_now() - datetime.timedelta(milliseconds=100), conf)

    def wait(self, run, expect: str = "success"):
        return self.api.wait_for_run(self.dag_id, run.run_id, expect=expect, timeout_s=400)

    def kill_apply_once_it_runs(self) -> threading.Thread:
        """kill -9 this pipeline's binlog application as soon as it starts (a crash mid-apply)."""
        return _watch_apply(self.pipeline_id, lambda process: process.kill())

    def kill_task_process_mid_apply(self) -> threading.Thread:
        """kill -9 the Airflow task process (the ``airflow worker -- <ti id>`` task runner) once its
        binlog application's driver runs: the application is orphaned, nothing of the task runs."""
        return _watch_apply(self.pipeline_id, _kill_task_process_of)

    def record(self, run) -> dict:
        return self.api.xcom(self.dag_id, run.run_id, "replicate")


def _apply_processes(pipeline_id: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        command = " ".join(process.info["cmdline"] or ())
        if "binlog_to_delta" in command and f"mysql-cdc-apply-{pipeline_id}-" in command:
            found.append(process)
    return found


def _watch_apply(pipeline_id: str, action) -> threading.Thread:
    def watch() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            for process in _apply_processes(pipeline_id):
                with contextlib.suppress(psutil.NoSuchProcess):
                    action(process)
                    return
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def _kill_task_process_of(application: psutil.Process) -> None:
    """SIGKILL the task process that started ``application`` (its nearest ``airflow worker --``
    ancestor), just after the driver's Python starts; raises NoSuchProcess (watch on) before that.
    The driver's Spark start takes seconds more, so the application is orphaned before it could end:
    3 s into the driver once let a short segment finish first, and the run was green."""
    if not any("python" in part for part in application.cmdline()[:1]):
        raise psutil.NoSuchProcess(application.pid)  # the spark-submit JVM: wait for its Python driver
    time.sleep(0.5)
    # The nearest: the supervisor above it is titled "airflow worker -- LocalExecutor: ...".
    task_process = next(
        p for p in application.parents() if " ".join(p.cmdline()).startswith("airflow worker --")
    )
    task_process.kill()


def _assert_nothing_outlived_the_killed_attempt(pipeline: Pipeline, record: dict, database: str) -> None:
    """No application left running, no work dir left, and the record counts the run's changes
    (those in the changelog between its start and end sets), which the orphan applied."""
    from airflow_mysql_cdc.engine.values.gtid import GtidSet
    from airflow_mysql_cdc.hooks.attempt_recovery import work_root
    from tests.support.lake import changelog_entries

    assert not _apply_processes(pipeline.pipeline_id), "an application outlived the run's attempts"
    root = work_root(f"mysql-cdc-apply-{pipeline.pipeline_id}")
    assert not root.is_dir() or not list(root.iterdir()), f"work dirs left: {list(root.iterdir())}"
    run_gtids = GtidSet.parse(record["end_gtids"]) - GtidSet.parse(record["start_gtids"])
    assert not record["already_applied"]
    for table in ("orders", "payments"):
        entries = changelog_entries(pipeline.lake, database, table)
        changes = [entry for entry in entries if GtidSet.parse(entry[0]).issubset(run_gtids)]
        assert record["tables"][f"{database}.{table}"]["rows_applied"] == len(changes) > 0, table


def _assert_the_retry_counts_what_the_orphan_applied(
    pipeline: Pipeline, run, record: dict, metric_lines: list[str]
) -> None:
    """The retry adopted the orphan's result: its XCom ``applied``, its ``mysql_cdc.apply.rows``
    counters (the legacy names StatsD receives) and its Summary line count the run's row changes, the
    record's, and say that an earlier try applied them (issue 34, item 5: they said 513 of 6,891)."""
    from airflow_mysql_cdc.hooks.metrics import legacy_segment

    rows = {table: facts["rows_applied"] for table, facts in record["tables"].items()}
    row_changes = sum(rows.values())
    applied = pipeline.api.xcom(pipeline.dag_id, run.run_id, "replicate", "applied")
    transactions = applied["transactions"]
    assert applied["rows_by_table"] == rows
    assert applied["by_earlier_tries"] == {"transactions": transactions, "row_changes": row_changes}
    pipeline_segment = legacy_segment(pipeline.pipeline_id)
    for table, count in rows.items():
        name = f"airflow.mysql_cdc.apply.rows.{pipeline_segment}.{legacy_segment(table)}"
        emitted = [line.partition(":")[2] for line in metric_lines if line.partition(":")[0] == name]
        assert emitted == [f"{count}|c"], (name, emitted)
    log = pipeline.api.task_log(pipeline.dag_id, run.run_id, "replicate", 2)
    [summary] = [line for line in log.splitlines() if "Summary: " in line]
    said = f"Summary: {transactions:,} transaction(s), {row_changes:,} row change(s), all of them applied"
    assert said + " by an earlier try of this run" in summary, summary


def _check(pipeline: Pipeline, replica: FrozenReplica, database: str) -> list[dict]:
    """Every record continues the one before; the lake equals the source at the latest end set."""
    records = chain_records(pipeline.lake, pipeline.pipeline_id)
    replica.assert_lake_equals(records[-1]["end_gtids"], pipeline.lake, database, ["orders", "payments"])
    assert_changelogs_hold_each_change_once(pipeline.lake, database, "orders", "payments")
    return records


def test_clears_marks_and_backfills_from_the_ui_keep_the_chain_and_the_lake_exact(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    airflow_deployment: AirflowDeployment,
    airflow_api: AirflowRestClient,
    airflow_statsd: StatsdListener,
    tmp_path: Path,
) -> None:
    database = mysql_database.database
    seed(mysql_database, "orders", 120)
    seed(mysql_database, "payments", 80)
    api = airflow_api
    feeds = ChangeFeedReader(airflow_deployment, api, tmp_path / "lake", f"{database}.orders")  # assets
    pipeline = Pipeline(airflow_deployment, api, mysql_database.with_database(None),
                        [f"{database}.orders", f"{database}.payments"], tmp_path / "lake")  # fmt: skip
    # About 40 transactions a second each: a live source, not a flood that would make every step a
    # long catch-up on 2 cores (unthrottled, they wrote 300,000 transactions in five minutes).
    with writers_running(mysql_database, 51, "orders", "payments", pause_s=0.02):
        first = pipeline.wait(pipeline.scheduled_first_run())
        records = _check(pipeline, frozen_replica, database)
        assert [record["run_id"] for record in records] == [first.run_id]
        # The UI's "Run record" button: the api-server serves the link the task pushed, to its XCom tab.
        links = api.extra_links(pipeline.dag_id, first.run_id, "replicate")
        assert links["Run record"] == (
            f"{airflow_deployment.api_url}/dags/{pipeline.dag_id}/runs/{quote(first.run_id, safe='')}"
            "/tasks/replicate/xcom"
        )

        # A run dies mid-apply; the next run is not held back by it (no depends_on_past: no deadlock).
        killer = pipeline.kill_apply_once_it_runs()
        failed = pipeline.wait(pipeline.trigger_now(), expect="failed")
        killer.join()
        assert api.task_states(pipeline.dag_id, failed.run_id)["replicate"] == "failed"
        covering = pipeline.wait(pipeline.trigger_now())
        records = _check(pipeline, frozen_replica, database)
        assert records[-1]["run_id"] == covering.run_id and records[-1]["previous_run_id"] == first.run_id
        # Cleared afterwards, the failed run finds its interval covered: it applies nothing and is green.
        api.clear_run(pipeline.dag_id, failed.run_id)
        pipeline.wait(failed)
        assert pipeline.record(failed) == records[-1]
        assert chain_records(pipeline.lake, pipeline.pipeline_id) == records

        # "Clear only failed" after the task process was killed with -9 mid-apply: the replicate task
        # runs again, adopts what the orphaned application applied and publishes it, leaving nothing.
        # Its apply metrics, XCom and Summary count what the orphan applied (issue 34, item 5).
        killer = pipeline.kill_task_process_mid_apply()
        retried = pipeline.wait(pipeline.trigger_now(), expect="failed")
        killer.join()
        metrics_before_the_retry = len(airflow_statsd.lines)
        api.clear_run(pipeline.dag_id, retried.run_id, only_failed=True)
        pipeline.wait(retried)
        records = _check(pipeline, frozen_replica, database)
        assert records[-1]["run_id"] == retried.run_id
        _assert_nothing_outlived_the_killed_attempt(pipeline, records[-1], database)
        _assert_the_retry_counts_what_the_orphan_applied(
            pipeline, retried, records[-1], airflow_statsd.lines[metrics_before_the_retry:]
        )

        # "Mark run failed" while the apply runs: the application is stopped (its process group with
        # the task), then "clear only failed" finishes the run with its record (never green without).
        # Whether the record was published before the mark reached the task is a race the user cannot
        # see: either way the chain holds this run's record once, after the clear.
        marked = pipeline.trigger_now()
        watcher = _watch_apply(
            pipeline.pipeline_id, lambda _: api.mark_run_failed(pipeline.dag_id, marked.run_id)
        )  # noqa: E501
        watcher.join()
        pipeline.wait(marked, expect="failed")
        deadline = time.monotonic() + 60
        while _apply_processes(pipeline.pipeline_id):
            assert time.monotonic() < deadline, "the application outlived its run being marked failed"
            time.sleep(0.5)
        from airflow_mysql_cdc.hooks.attempt_recovery import work_root

        root = work_root(f"mysql-cdc-apply-{pipeline.pipeline_id}")
        _assert_on_kill_removed_or_began_stopping(root)
        meanwhile = chain_records(pipeline.lake, pipeline.pipeline_id)
        assert meanwhile[: len(records)] == records and [r["run_id"] for r in meanwhile[len(records) :]] in (
            [],
            [marked.run_id],
        )
        api.clear_run(pipeline.dag_id, marked.run_id, only_failed=True)
        pipeline.wait(marked)
        assert not root.is_dir() or not list(root.iterdir()), "a work dir outlived the attempt after the mark"
        records = _check(pipeline, frozen_replica, database)
        assert records[-1]["run_id"] == marked.run_id
        assert pipeline.record(marked) == records[-1]

        # A backfill over the first run, reprocessing completed runs (the UI's "All Runs"): the first run
        # republishes its record unchanged; the day before it is skipped, saying where to start.
        published = {record["run_id"]: record for record in records}
        overlapping = api.create_backfill(pipeline.dag_id, pipeline.start - DAY, pipeline.start,
                                          reprocess_behavior="completed", max_active_runs=1)  # fmt: skip
        assert overlapping.logical_dates == (pipeline.start - DAY, pipeline.start)
        before, again = api.wait_for_backfill(overlapping, timeout_s=300, until_marked_complete=False)
        assert (before.state, again.state, again.run_id) == ("success", "success", first.run_id)
        assert api.task_states(pipeline.dag_id, before.run_id)["load_checkpoint"] == "skipped"
        log = api.task_log(pipeline.dag_id, before.run_id, "load_checkpoint", 1)
        assert "before the pipeline's first interval" in log and "backfill create --from-date" in log
        assert pipeline.record(again) == published[first.run_id]
        api.cancel_backfill(overlapping.id)  # done: lets the next backfill in without the 30 s wait

        # A backfill entirely before the first run, without reprocessing (the UI's default): skipped.
        early = api.create_backfill(pipeline.dag_id, pipeline.start - 3 * DAY, pipeline.start - 2 * DAY,
                                    reprocess_behavior="none", max_active_runs=1)  # fmt: skip
        refused = api.wait_for_backfill(early, timeout_s=300, until_marked_complete=False)
        assert [run.state for run in refused] == ["success", "success"]  # skipped tasks, not red
        api.cancel_backfill(early.id)

        # Nothing above rewrote a record, and the pipeline goes on.
        assert chain_records(pipeline.lake, pipeline.pipeline_id) == records
        later = pipeline.wait(pipeline.trigger_now())
        records = _check(pipeline, frozen_replica, database)
        assert records[-1]["run_id"] == later.run_id
        assert {record["run_id"]: record for record in records[:-1]} == published
    feeds.assert_read_every_feed(records, first.run_id)


def _assert_on_kill_removed_or_began_stopping(root: Path) -> None:
    """``on_kill`` removes the marked attempt's work dir within Airflow's 5 s; on a host loaded enough
    that Airflow's SIGKILL came first, the dir is one whose marker says ``on_kill`` began the stop
    (its application is gone: checked before this), and the next attempt removes it (checked after
    the clear). Never a dir whose application nobody stopped.

    Judged once the marked attempt's task process is gone, not as soon as its application is: when
    the application reached its end on its own just before the mark, the task process removes the
    dir a few milliseconds after the application exits (one CI run looked inside that window)."""
    from airflow_mysql_cdc.hooks.attempt_marker import MARKER_FILE, AttemptMarker
    from airflow_mysql_cdc.hooks.attempt_recovery import process_alive

    for work_dir in sorted(root.iterdir()) if root.is_dir() else []:
        with contextlib.suppress(FileNotFoundError):  # removed meanwhile: what on_kill or the try does
            task_process = AttemptMarker.from_json((work_dir / MARKER_FILE).read_text()).task_process
            deadline = time.monotonic() + 60
            while process_alive(task_process):
                assert time.monotonic() < deadline, f"the task process of {work_dir} outlived its mark"
                time.sleep(0.2)
            marker = AttemptMarker.from_json((work_dir / MARKER_FILE).read_text())
            assert marker.stopping, f"{work_dir} outlived the marked attempt and on_kill never began the stop"


UPKEEP = ("maintain_lake", "verify_lake")


def test_a_run_queued_behind_a_catch_up_carries_out_its_conf_and_covered_runs_start_no_upkeep(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    airflow_deployment: AirflowDeployment,
    airflow_api: AirflowRestClient,
    tmp_path: Path,
) -> None:
    """Issue 34, items 6 and 7, as the scheduler sends queued runs (by ``run_after``).

    Hourly from 2 h 50 min ago, with ``verify: sample``: the scheduler's first run is the schedule's
    first point. While it runs, two runs queue behind it (``max_active_runs=1``): one dated 90 min
    ago, which starts more than an interval late and catches the backlog up to when it starts, and
    an action run triggered now, which the catch-up covers by the time it starts. The action run
    carries its re-snapshot out from the head on (it was refused two minutes after passing
    ``load_checkpoint``). The scheduled runs of the two points passed since find their intervals
    covered: four tasks, and ``maintain_lake`` and ``verify_lake`` skipped, never started (they ran
    a maintenance process and a sample verification at an unmoved position).
    """
    database = mysql_database.database
    seed(mysql_database, "orders", 120)
    seed(mysql_database, "payments", 80)
    payments = f"{database}.payments"
    api = airflow_api
    pipeline = Pipeline(airflow_deployment, api, mysql_database.with_database(None),
                        [f"{database}.orders", payments], tmp_path / "lake", schedule="every 1h",
                        age=datetime.timedelta(hours=2, minutes=50), verify="sample")  # fmt: skip
    with writers_running(mysql_database, 61, "orders", "payments", pause_s=0.02):
        first = pipeline.scheduled_first_run()
        catching_up = api.trigger_run(pipeline.dag_id, utc_now() - datetime.timedelta(minutes=90))
        acting = pipeline.trigger_now({"resnapshot": [payments]})
        for run in (first, catching_up, acting):
            pipeline.wait(run)
        # The two points passed: their scheduled runs are made once the queue is empty.
        deadline = time.monotonic() + 300
        while len(scheduled := api.dag_runs(pipeline.dag_id, run_types=["scheduled"])) < 3:
            assert time.monotonic() < deadline, f"the scheduler made {len(scheduled)} of 3 runs"
            time.sleep(1)
        for run in scheduled:
            pipeline.wait(run)
    api.set_paused(pipeline.dag_id, True)  # the next point, 10 min after the start, is not this test's
    records = _check(pipeline, frozen_replica, database)

    # The action run continued the catch-up's record, whose segment had passed its interval end, and
    # re-snapshotted the table; load_checkpoint said so before anything ran.
    by_run = {record["run_id"]: record for record in records}
    acted = by_run[acting.run_id]
    covering = by_run[acted["previous_run_id"]]
    assert datetime.datetime.fromisoformat(covering["segment_end"]) > acting.data_interval_end
    assert covering["run_id"] != first.run_id  # the catch-up, whichever late run went first
    assert [(action["action"], action["table"]) for action in acted["actions"]] == [("resnapshot", payments)]
    placed = api.task_log(pipeline.dag_id, acting.run_id, "load_checkpoint", 1)
    assert "its conf asks for actions, so it carries them out from the head on" in placed

    # Every run that applied ran its upkeep; every covered run skipped it without starting a process.
    covered = [run for run in [*scheduled, catching_up] if run.run_id not in by_run]
    assert len(covered) >= 2 and {run.run_id for run in scheduled[1:]} <= {run.run_id for run in covered}
    for run in covered:
        instances = {ti.task_id: ti for ti in api.task_instances(pipeline.dag_id, run.run_id)}
        assert {task: ti.state for task, ti in instances.items()} == {
            "check_prerequisites": "success", "load_checkpoint": "success", "resumability": "success",
            "replicate": "success", "maintain_lake": "skipped", "verify_lake": "skipped",
        }  # fmt: skip
        assert [instances[task].try_number for task in UPKEEP] == [0, 0]  # never started
        log = api.task_log(pipeline.dag_id, run.run_id, "replicate", 1)
        assert "skipped: maintain_lake, verify_lake: the lake's position did not move since run" in log
        assert "Summary: nothing applied: " in log
    for run_id in by_run:
        assert [api.task_states(pipeline.dag_id, run_id)[task] for task in UPKEEP] == ["success", "success"]


# --- Assets (issue 26, item 1): a downstream DAG scheduled on a changelog asset reads each run's feed ---

DOWNSTREAM_SOURCE = """
from airflow.sdk import DAG, task
from airflow_mysql_cdc.runs import lake
from airflow_mysql_cdc.runs.assets import lake_table_asset, read_change_feed
from airflow_mysql_cdc.engine.values.gtid import GtidSet

changelog = lake_table_asset({lake_root!r}, {table!r}, "changelog")

with DAG({dag_id!r}, schedule=[changelog], catchup=False):

    @task
    def read_feeds(**context):
        read = []
        for event in context["triggering_asset_events"][changelog]:
            versions = event.extra["lake_versions"]["changelog"]
            feed = read_change_feed(event.extra)  # as of versions["last"]
            before = None
            if versions["first"]:  # the feed's transactions, as of the version before the range
                extra = event.extra
                transactions = GtidSet.parse(extra["end_gtids"]) - GtidSet.parse(extra["start_gtids"])
                before = lake.changelog_rows(
                    event.extra["changelog_table"], transactions, None, version=versions["first"] - 1
                ).num_rows
            read.append({{"record_run_id": event.extra["record_run_id"], "applied": event.extra["applied"],
                          "versions": versions, "rows": feed.num_rows, "rows_before_range": before}})
        return read

    read_feeds()
"""


class ChangeFeedReader:
    """A downstream DAG scheduled on the changelog asset of ``table``, unpaused before the pipeline runs."""

    def __init__(self, deployment: AirflowDeployment, api: AirflowRestClient, lake: Path, table: str) -> None:
        self.api, self.table = api, table
        self.dag_id = f"feed_{uuid.uuid4().hex[:8]}"
        source = DOWNSTREAM_SOURCE.format(lake_root=str(lake), table=table, dag_id=self.dag_id)
        deployment.write_dag_file(f"{self.dag_id}.py", source)
        api.wait_for_dag(self.dag_id, file_name=f"{self.dag_id}.py")
        api.unpause(self.dag_id)

    def assert_read_every_feed(self, records: list[dict], first_run_id: str) -> None:
        """Asset-triggered runs read, for each run's event, the rows and versions its record names."""
        deadline = time.monotonic() + 180
        while True:
            runs = self.api.dag_runs(self.dag_id, run_types=["asset_triggered"])
            done = [run for run in runs if run.state in ("success", "failed")]
            read = [
                entry for run in done for entry in self.api.xcom(self.dag_id, run.run_id, "read_feeds") or []
            ]
            if any(entry["record_run_id"] == first_run_id for entry in read) or time.monotonic() > deadline:
                break
            time.sleep(2)
        assert done and all(run.state == "success" for run in done), [(r.run_id, r.state) for r in done]
        published = {record["run_id"]: record["tables"][self.table] for record in records}
        applied = [entry for entry in read if entry["applied"]]
        assert {entry["record_run_id"] for entry in applied} >= {first_run_id}
        for entry in applied:
            facts = published[entry["record_run_id"]]
            assert entry["versions"] == facts["lake_versions"]["changelog"]
            assert entry["rows"] == facts["rows_applied"] > 0
            assert entry["rows_before_range"] in (None, 0)  # the range is where the feed was written
        assert all(entry["rows"] == 0 for entry in read if not entry["applied"])
