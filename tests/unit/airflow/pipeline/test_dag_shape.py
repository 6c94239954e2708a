"""The example DAG's shape: what keeps retries, clears and backfills safe under the scheduler."""

from __future__ import annotations

from airflow_mysql_cdc.pipeline.config import PipelineConfig
from airflow_mysql_cdc.pipeline.dag import build_pipeline_dag


def test_runs_wait_for_no_other_run_and_one_replicate_runs_at_a_time() -> None:
    dag = build_pipeline_dag(PipelineConfig(dag_id="shape", schedule="every 30s"))
    assert [task.task_id for task in dag.topological_sort()] == [
        "check_prerequisites", "load_checkpoint", "resumability", "replicate", "maintain_lake",
        "verify_lake",  # on by default (sample): a wrong table is found by the next run
    ]  # fmt: skip
    assert dag.get_task("verify_lake").settings.mode == "sample"
    off = build_pipeline_dag(PipelineConfig(dag_id="shape_off", schedule="every 30s", verify="off"))
    assert [task.task_id for task in off.topological_sort()][-1] == "maintain_lake"
    assert not any(task.depends_on_past for task in dag.tasks)  # a failed run held the next one: deadlock
    assert dag.max_active_runs == 1
    assert dag.get_task("replicate").max_active_tis_per_dag == 1
    assert dag.get_task("load_checkpoint").multiple_outputs is False  # one XCom, not one per key


def test_a_run_late_by_more_than_one_interval_catches_the_backlog_up_unless_turned_off() -> None:
    catching_up = build_pipeline_dag(PipelineConfig(dag_id="late", schedule="@hourly"))
    assert catching_up.get_task("replicate").catch_up_backlog_after.total_seconds() == 3600
    one_by_one = build_pipeline_dag(
        PipelineConfig(dag_id="late2", schedule="@hourly", catch_up_backlog=False)
    )
    assert one_by_one.get_task("replicate").catch_up_backlog_after is None


def test_a_covered_run_skips_the_maintenance_and_the_verification_after_replicate() -> None:
    """Its position did not move: both would start a process to decide nothing (issue 34, item 7).
    What the skip looks like under a scheduler: test_pipeline_under_the_scheduler.py."""
    dag = build_pipeline_dag(PipelineConfig(dag_id="covered", schedule="every 30s"))
    replicate = dag.get_task("replicate")
    assert replicate.skip_downstream_when_covered is True
    assert replicate.get_flat_relative_ids(upstream=False) == {"maintain_lake", "verify_lake"}
