"""Where a run stands in the chain: first, forward, re-run, covered, or refused before the first."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.lake.run_placement import RunBeforeFirstIntervalError, place_run
from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord, SourceIdentity

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def record(run_id: str, start_hour: int, end_hour: int, end_gtid: int) -> CheckpointRecord:
    return CheckpointRecord(
        pipeline_id="p", lake_root="/lake", source=SourceIdentity(U, "db", 3306),
        start_gtids=f"{U}:1-{end_gtid - 1}", end_gtids=f"{U}:1-{end_gtid}",
        segment_start=f"2026-11-01T{start_hour:02}:00:00+00:00",
        segment_end=f"2026-11-01T{end_hour:02}:00:00+00:00", run_id=run_id,
    )  # fmt: skip


CHAIN = [record("r1", 0, 1, 10), record("r3", 1, 3, 30), record("r4", 3, 4, 40)]


def test_without_records_a_run_is_the_first() -> None:
    assert place_run([], "2026-11-01T05:00:00+00:00").kind == "first"


def test_a_run_after_the_head_continues_it_and_covers_failed_intervals_in_between() -> None:
    placement = place_run(CHAIN, "2026-11-01T06:00:00Z")
    assert placement.kind == "forward" and placement.record is CHAIN[-1]
    assert placement.applies


def test_a_run_of_a_published_interval_republishes_its_record_whatever_the_time_zone_spelling() -> None:
    placement = place_run(list(reversed(CHAIN)), "2026-11-01T04:00:00.000000+00:00")
    assert placement.kind == "rerun" and placement.record is CHAIN[2]
    assert not placement.applies


def test_a_failed_interval_cleared_after_its_successor_published_is_covered_by_it() -> None:
    placement = place_run(CHAIN, "2026-11-01T02:00:00+00:00")
    assert placement.kind == "covered" and placement.record is CHAIN[1]
    assert "inside the segment of run r3" in placement.describe("2026-11-01T02:00:00+00:00")


def test_a_run_before_the_first_interval_is_refused_with_the_backfill_to_run_instead() -> None:
    with pytest.raises(RunBeforeFirstIntervalError) as refused:
        place_run(CHAIN, "2026-10-31T23:00:00+00:00")
    message = str(refused.value)
    assert "before the pipeline's first interval (run r1" in message
    assert "--from-date 2026-11-01T01:00:00+00:00" in message


def test_a_cleared_run_that_caught_up_past_its_interval_is_a_rerun_of_its_own_record() -> None:
    # r3's interval ended at 02:00, but it caught a backlog up to 03:00: its record covers 02:00.
    caught_up = [record("r1", 0, 1, 10), record("r3", 1, 3, 30)]
    placement = place_run(caught_up, "2026-11-01T02:00:00+00:00", run_id="r3")
    assert placement.kind == "rerun" and placement.record is caught_up[1]
    said = placement.describe("2026-11-01T02:00:00+00:00")
    assert "inside the segment" not in said
    assert said == (
        "a re-run of the interval ending 2026-11-01T02:00:00+00:00, published by run r3 (which caught up "
        "to 2026-11-01T03:00:00+00:00): its record is republished unchanged and nothing is applied"
    )
    # Another run of that interval (a backfill, a failed run cleared later) is covered by r3.
    assert place_run(caught_up, "2026-11-01T02:00:00+00:00", run_id="r2").kind == "covered"
