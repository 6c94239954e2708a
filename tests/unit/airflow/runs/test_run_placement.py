"""Where a run stands in the chain: first, forward, re-run, covered, or refused before the first."""

from __future__ import annotations

import datetime

import pytest

from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord, SourceIdentity
from airflow_mysql_cdc.runs.run_placement import RunBeforeFirstIntervalError, place_run

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


# --- A run whose conf asks for actions (issue 34, item 6) ---

AFTER_THE_HEAD = datetime.datetime(2026, 11, 1, 4, 0, 5, tzinfo=datetime.UTC)
"""When the action run would act: five seconds after the head's segment ended."""


def test_an_action_run_queued_while_a_catch_up_covered_its_interval_continues_the_head() -> None:
    # r4 started late and caught up to 04:00; the action run, triggered at 03:30, waited behind it.
    placement = place_run(CHAIN, "2026-11-01T03:30:00+00:00", run_id="act", acts_at=AFTER_THE_HEAD)
    assert placement.kind == "forward" and placement.applies
    assert placement.record is CHAIN[-1] and placement.overtaken is CHAIN[-1]
    said = placement.describe("2026-11-01T03:30:00+00:00")
    assert said.startswith("continues run r4 (interval ending 2026-11-01T04:00:00+00:00")
    assert "although its interval ending 2026-11-01T03:30:00+00:00 is inside the segment of run r4" in said
    assert "carries them out from the head on, its segment ending when it starts" in said
    # Without actions it is covered, as before: it applies nothing and skips Spark.
    assert place_run(CHAIN, "2026-11-01T03:30:00+00:00", run_id="plain").kind == "covered"


def test_an_action_run_on_its_first_try_acts_even_when_an_older_record_covers_it() -> None:
    # Two action runs queued behind one catch-up: the first became the head, the second is covered
    # by the catch-up's record, not the head; it never ran before, so it continues the head too.
    placement = place_run(CHAIN, "2026-11-01T02:00:00+00:00", run_id="act2", acts_at=AFTER_THE_HEAD)
    assert (placement.kind, placement.record, placement.overtaken) == ("forward", CHAIN[-1], CHAIN[1])


def test_a_cleared_action_run_acts_only_when_nothing_was_published_since_the_record_covering_it() -> None:
    cleared_behind_the_head = place_run(
        CHAIN, "2026-11-01T03:30:00+00:00", run_id="act", acts_at=AFTER_THE_HEAD, cleared=True
    )
    assert cleared_behind_the_head.kind == "forward" and cleared_behind_the_head.overtaken is CHAIN[-1]
    cleared_long_after = place_run(
        CHAIN, "2026-11-01T02:00:00+00:00", run_id="act", acts_at=AFTER_THE_HEAD, cleared=True
    )
    assert cleared_long_after.kind == "covered" and cleared_long_after.record is CHAIN[1]


def test_an_action_run_whose_head_ends_after_it_would_act_stays_covered() -> None:
    # A run dated in the future published a segment ending after now: no later end to give.
    before_the_head_ends = datetime.datetime(2026, 11, 1, 3, 59, tzinfo=datetime.UTC)
    placement = place_run(CHAIN, "2026-11-01T03:30:00+00:00", run_id="act", acts_at=before_the_head_ends)
    assert placement.kind == "covered"


def test_a_run_that_published_a_record_is_a_rerun_of_it_wherever_its_interval_lies() -> None:
    # The action run above, published (its segment ending when it started), then retried or cleared:
    # its own record, never the catch-up's that covers its interval, and it acts no second time.
    acted = [*CHAIN, record("act", 4, 5, 50)]
    placement = place_run(acted, "2026-11-01T03:30:00+00:00", run_id="act", acts_at=AFTER_THE_HEAD)
    assert placement.kind == "rerun" and placement.record is acted[-1]
