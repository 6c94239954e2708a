"""A re-run of a published interval pushes the run's other XComs again from its record."""

from __future__ import annotations

import logging
from typing import Any

from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord, SourceIdentity
from airflow_mysql_cdc.runs.republish import push_again

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


class _Ti:
    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def _record(pushed: dict[str, Any]) -> CheckpointRecord:
    return CheckpointRecord(
        pipeline_id="p", lake_root="/lake", source=SourceIdentity(U, "db", 3306), start_gtids="",
        end_gtids=f"{U}:1-3", segment_start=None, segment_end="2026-11-01T01:00:00+00:00",
        run_id="scheduled__2026-11-01T01:00:00+00:00", pushed=pushed,
    )  # fmt: skip


def test_a_rerun_pushes_the_plan_snapshot_and_applied_its_record_keeps(caplog) -> None:
    kept = {"plan": {"tables": ["s.orders"]}, "snapshot": {"tables": [{"table": "s.orders"}]}, "applied": {}}
    ti = _Ti()
    with caplog.at_level(logging.INFO):
        assert push_again(ti, _record(kept), logging.getLogger("t")) == ["plan", "snapshot", "applied"]
    assert ti.pushed == kept
    assert "pushed again from the record of run scheduled__2026-11-01T01:00:00+00:00: plan" in caplog.text


def test_a_record_of_an_earlier_version_pushes_nothing_and_says_nothing(caplog) -> None:
    ti = _Ti()
    with caplog.at_level(logging.INFO):
        assert push_again(ti, _record({}), logging.getLogger("t")) == []
    assert ti.pushed == {} and caplog.text == ""
