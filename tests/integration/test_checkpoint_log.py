"""The checkpoint log in the lake: one record per interval end, never rewritten, in interval order."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.lake.checkpoint_log import CheckpointLog, CheckpointLogError
from airflow_mysql_cdc.engine.values.checkpoint import CheckpointError, CheckpointRecord, SourceIdentity

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def _record(run_id: str, end_hour: int, end_gtid: int, pipeline_id: str = "p") -> CheckpointRecord:
    return CheckpointRecord(
        pipeline_id=pipeline_id, lake_root="/lake", source=SourceIdentity(U, "db", 3306),
        start_gtids=f"{U}:1-{end_gtid - 1}", end_gtids=f"{U}:1-{end_gtid}",
        segment_start=f"2026-11-01T{end_hour - 1:02}:00:00+00:00",
        segment_end=f"2026-11-01T{end_hour:02}:00:00+00:00", run_id=run_id,
    )  # fmt: skip


def test_records_come_back_in_interval_order_and_a_rerun_is_told_to_republish(tmp_path) -> None:
    log = CheckpointLog(tmp_path, "p")
    assert log.records() == []
    for run_id, hour, gtid in (("r3", 3, 30), ("r1", 1, 10), ("r2", 2, 20)):
        log.append(_record(run_id, hour, gtid))
    assert [r.run_id for r in log.records()] == ["r1", "r2", "r3"]
    with pytest.raises(
        CheckpointLogError, match="already holds a record for the interval ending .* republishes"
    ):
        log.append(_record("r2-again", 2, 25))  # the same instant, spelled in UTC
    assert [r.end_gtids for r in log.records()] == [f"{U}:1-10", f"{U}:1-20", f"{U}:1-30"]


def test_a_second_record_of_an_interval_that_raced_in_never_replaces_the_first(tmp_path, monkeypatch) -> None:
    """Two publishers that both saw no record for the interval: the first one appended stays the record."""
    log = CheckpointLog(tmp_path, "p")
    log.append(_record("first", 1, 10))
    monkeypatch.setattr(CheckpointLog, "records", lambda self: [])  # the second publisher's stale view
    log.append(_record("late", 1, 99))
    monkeypatch.undo()
    assert [(r.run_id, r.end_gtids) for r in log.records()] == [("first", f"{U}:1-10")]


def test_a_log_of_another_pipeline_is_refused_with_where_to_point_instead(tmp_path) -> None:
    CheckpointLog(tmp_path, "other").append(_record("r1", 1, 10, pipeline_id="other"))
    with pytest.raises(
        CheckpointError, match="holds checkpoints of pipeline 'other', not 'p'.*own lake location"
    ):
        CheckpointLog(tmp_path, "p").records()


def test_a_record_without_an_interval_end_has_no_place_in_the_log(tmp_path) -> None:
    record = _record("r1", 1, 10)
    unplaced = CheckpointRecord(**{**record.__dict__, "segment_end": None})
    with pytest.raises(CheckpointLogError, match="without a segment end"):
        CheckpointLog(tmp_path, "p").append(unplaced)
