"""A run that applies nothing (issue 34, item 7): a covered run skips the maintenance and the
verification after ``replicate``, since the lake's position did not move; a re-run of a published
interval does not (a clear is a request to check again). Under ``dag.test``:
test_failed_retried_cleared_and_caught_up_runs_apply_everything_once; under the real scheduler:
tests/integration/scheduler/test_pipeline_under_the_scheduler.py."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from airflow.sdk.exceptions import DownstreamTasksSkipped

from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord, SourceIdentity
from airflow_mysql_cdc.operators.replicate import MySqlCdcReplicateOperator
from airflow_mysql_cdc.pipeline.config import PipelineConfig
from airflow_mysql_cdc.pipeline.dag import build_pipeline_dag
from airflow_mysql_cdc.runs.run_placement import Placement

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
RECORD = CheckpointRecord(
    pipeline_id="p", lake_root="/lake", source=SourceIdentity(UUID, "db", 3306),
    start_gtids=f"{UUID}:1-10", end_gtids=f"{UUID}:1-20", segment_start="2026-11-01T00:00:00+00:00",
    segment_end="2026-11-01T03:00:00+00:00", run_id="scheduled__late",
)  # fmt: skip


class _TaskInstance:
    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def _replicate(monkeypatch: pytest.MonkeyPatch, *, verify: str = "sample") -> MySqlCdcReplicateOperator:
    dag = build_pipeline_dag(PipelineConfig(dag_id="covered", schedule="every 30s", verify=verify))
    replicate = dag.get_task("replicate")
    assert isinstance(replicate, MySqlCdcReplicateOperator)
    monkeypatch.setattr(replicate, "_emit_asset_events", lambda context, record: record)
    return replicate


def _context(ti: _TaskInstance) -> dict[str, Any]:
    return {"ti": ti, "data_interval_end": datetime.datetime(2026, 11, 1, 2, tzinfo=datetime.UTC)}


def test_a_covered_run_skips_maintenance_and_verification_and_still_returns_its_record(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    replicate, ti = _replicate(monkeypatch), _TaskInstance()
    with pytest.raises(DownstreamTasksSkipped) as skipped:
        replicate._apply_nothing(_context(ti), Placement("covered", RECORD))
    assert skipped.value.tasks == ["maintain_lake", "verify_lake"]
    assert ti.pushed == {"return_value": RECORD.to_dict()}  # the record, as a returning task pushes it
    shown = capfd.readouterr()
    log = shown.out + shown.err
    said = (
        "skipped: maintain_lake, verify_lake: the lake's position did not move since run scheduled__late, "
        "whose own tasks ran there"
    )
    assert said in log
    assert "Summary: nothing applied: the interval ending 2026-11-01T02:00:00+00:00 is" in log
    assert log.index(said) < log.index("Summary: ")


def test_a_rerun_of_a_published_interval_runs_maintenance_and_verification_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    replicate, ti = _replicate(monkeypatch), _TaskInstance()
    monkeypatch.setattr("airflow_mysql_cdc.operators.replicate.push_again", lambda *args: None)
    assert replicate._apply_nothing(_context(ti), Placement("rerun", RECORD)) == RECORD.to_dict()


def test_a_covered_run_of_an_operator_not_told_to_skip_lets_its_downstream_tasks_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    replicate, ti = _replicate(monkeypatch, verify="off"), _TaskInstance()
    replicate.skip_downstream_when_covered = False  # a custom DAG's default
    assert replicate._apply_nothing(_context(ti), Placement("covered", RECORD)) == RECORD.to_dict()
