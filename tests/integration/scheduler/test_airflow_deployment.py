"""The scheduler-test harness works end to end: a real scheduler runs what the REST API asks for.

A throwaway two-task DAG (``extract`` returns the run's day, ``load`` adds to it and, when the
run's conf says so, fails its first try) goes through what users do in the UI: unpause, trigger
runs, see one fail, clear only the failed task, mark a run failed, clear a single task, backfill a
range without and with reprocessing completed runs, and read a task's XCom. The pipeline
scenarios build on the same fixtures (``airflow_deployment``, ``airflow_api``).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support.airflow_deployment import AirflowDeployment
from tests.support.airflow_rest import AirflowRestClient

pytestmark = [pytest.mark.scheduler, pytest.mark.slow, pytest.mark.xdist_group("airflow_deployment")]

DAG_ID = "harness_proof"

# end_date in the past: the scheduler creates no scheduled runs of its own, so every run the test
# sees is one it asked for (manual or backfill).
DAG_SOURCE = '''
"""Throwaway DAG of tests/integration/test_airflow_deployment.py."""
from datetime import datetime, timezone
from pathlib import Path

from airflow.sdk import dag, get_current_context, task

FLAGS = Path({flags!r})


@dag(
    dag_id={dag_id!r},
    schedule="@daily",
    start_date=datetime(2024, 1, 1, tzinfo=timezone.utc),
    end_date=datetime(2024, 12, 31, tzinfo=timezone.utc),
    catchup=False,
    default_args={{"retries": 0}},
)
def harness_proof():
    @task
    def extract() -> dict:
        return {{"day": get_current_context()["logical_date"].date().isoformat()}}

    @task
    def load(extracted: dict) -> dict:
        context = get_current_context()
        flag = FLAGS / context["run_id"].replace(":", "_").replace("+", "_")
        if context["dag_run"].conf.get("fail_first_try") and not flag.exists():
            flag.touch()
            raise RuntimeError("load fails its first try on purpose")
        return {{**extracted, "loaded": True}}

    load(extract())


harness_proof()
'''


def day(number: int) -> datetime:
    return datetime(2024, 3, number, tzinfo=UTC)


@pytest.fixture(scope="module")
def proof_dag(airflow_deployment: AirflowDeployment, airflow_api: AirflowRestClient) -> str:
    flags = airflow_deployment.folder / "harness-proof-flags"
    flags.mkdir(exist_ok=True)
    airflow_deployment.write_dag_file(f"{DAG_ID}.py", DAG_SOURCE.format(dag_id=DAG_ID, flags=str(flags)))
    first_parse = airflow_api.wait_for_dag(DAG_ID, file_name=f"{DAG_ID}.py")
    assert airflow_api.reparse(DAG_ID)["last_parsed_time"] > first_parse["last_parsed_time"]
    airflow_api.unpause(DAG_ID)
    return DAG_ID


def test_runs_retries_marks_backfills_and_xcom_go_through_the_rest_api(
    proof_dag: str, airflow_api: AirflowRestClient
) -> None:
    api = airflow_api
    first = api.trigger_run(proof_dag, day(1))
    flaky = api.trigger_run(proof_dag, day(2), {"fail_first_try": True})

    assert api.wait_for_run(proof_dag, first.run_id).state == "success"
    api.wait_for_run(proof_dag, flaky.run_id, expect="failed")
    assert api.task_states(proof_dag, flaky.run_id) == {"extract": "success", "load": "failed"}
    assert "load fails its first try on purpose" in api.task_log(proof_dag, flaky.run_id, "load", 1)

    # Clear only the failed task: extract keeps its first try, load runs a second one.
    api.clear_run(proof_dag, flaky.run_id, only_failed=True)
    api.wait_for_run(proof_dag, flaky.run_id)
    tries = {ti.task_id: ti.try_number for ti in api.task_instances(proof_dag, flaky.run_id)}
    assert tries == {"extract": 1, "load": 2}
    assert api.xcom(proof_dag, flaky.run_id, "load") == {"day": "2024-03-02", "loaded": True}

    # Mark a finished run failed, then clear one task of it: the run runs that task again and succeeds.
    assert api.mark_run_failed(proof_dag, first.run_id).state == "failed"
    assert api.dag_run(proof_dag, first.run_id).state == "failed"
    assert api.clear_tasks(proof_dag, first.run_id, ["load"]) == ["load"]
    api.wait_for_run(proof_dag, first.run_id)
    tries = {ti.task_id: ti.try_number for ti in api.task_instances(proof_dag, first.run_id)}
    assert tries == {"extract": 1, "load": 2}

    # Backfill without reprocessing: only the days with no run yet get one.
    fill_gaps = api.create_backfill(proof_dag, day(1), day(4), reprocess_behavior="none")
    assert fill_gaps.logical_dates == (day(3), day(4))
    assert [run.state for run in api.wait_for_backfill(fill_gaps)] == ["success", "success"]

    # Backfill reprocessing completed runs: the existing manual runs run again as backfill runs.
    rerun = api.create_backfill(proof_dag, day(1), day(2), reprocess_behavior="completed")
    assert rerun.logical_dates == (day(1), day(2))
    rerun_runs = api.wait_for_backfill(rerun)
    assert {run.run_id for run in rerun_runs} == {first.run_id, flaky.run_id}
    assert all(run.state == "success" for run in rerun_runs)

    runs = api.dag_runs(proof_dag)
    assert [(run.logical_date, run.run_type) for run in runs] == [
        (day(1), "backfill"),
        (day(2), "backfill"),
        (day(3), "backfill"),
        (day(4), "backfill"),
    ]
    assert api.xcom(proof_dag, runs[3].run_id, "load") == {"day": "2024-03-04", "loaded": True}
