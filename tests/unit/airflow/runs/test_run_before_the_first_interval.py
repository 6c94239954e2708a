"""A run dated before the pipeline's first interval ends skipped with the reason, never failed: a
backfill over earlier dates must not stay red in the grid (issue 26). The same run under Airflow:
tests/integration/test_pipeline_dag.py (dag.test) and the scheduler test (a backfill)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowSkipException

from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord, SourceIdentity
from airflow_mysql_cdc.runs import checkpoint_chain

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
FIRST = CheckpointRecord(
    pipeline_id="shop", lake_root="/lake", source=SourceIdentity(UUID, "db", 3306),
    start_gtids="", end_gtids=f"{UUID}:1-10", segment_start="2026-11-01T00:00:00+00:00",
    segment_end="2026-11-02T00:00:00+00:00", run_id="scheduled__2026-11-01",
)  # fmt: skip


class _Chain:
    def records(self) -> list[CheckpointRecord]:
        return [FIRST]


def test_a_run_before_the_first_interval_is_skipped_naming_the_backfill_to_run_instead(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(checkpoint_chain.lake, "checkpoint_log", lambda *args: _Chain())
    context: dict[str, Any] = {
        "logical_date": datetime.datetime(2026, 10, 30, tzinfo=datetime.UTC),
        "data_interval_end": datetime.datetime(2026, 10, 31, tzinfo=datetime.UTC),
    }
    with caplog.at_level("INFO"), pytest.raises(AirflowSkipException) as skipped:
        checkpoint_chain.locate_run(context, pipeline_id="shop", lake_root="/lake", mysql_cdc_conn_id="c")
    reason = str(skipped.value)
    assert reason.startswith("skipped: this run's interval ends at 2026-10-31")
    assert "before the pipeline's first interval (run scheduled__2026-11-01" in reason
    assert "airflow backfill create --from-date 2026-11-02T00:00:00+00:00" in reason
    assert reason in caplog.text  # a plain log line too: a skip's reason is a field some views omit
