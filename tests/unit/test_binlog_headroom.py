"""The headroom arithmetic and its one judging rule, without a server (docs/operations.md, "Binlog
retention headroom")."""

from __future__ import annotations

import datetime

import pytest

from airflow_mysql_cdc.engine.errors import NextStep
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.headroom import (
    BinlogRetention,
    HeadroomLevel,
    HeadroomPolicy,
    HeadroomReading,
    choose_needed_file,
    format_duration,
    headroom_seconds,
    judge_headroom,
)

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
NOW = datetime.datetime(2026, 11, 20, 12, 0, tzinfo=datetime.UTC)
HOUR = 3600
DAY = 24 * HOUR
PREVIOUS = {
    "binlog.000001": "",
    "binlog.000002": f"{UUID}:1-10",
    "binlog.000003": f"{UUID}:1-25",
    "binlog.000004": f"{UUID}:1-40",
}
FILES = list(PREVIOUS)


def _reading(retention_s: int | None, *, closed_ago_s: float | None, platform="mysql") -> HeadroomReading:
    last_write = None if closed_ago_s is None else NOW - datetime.timedelta(seconds=closed_ago_s)
    return HeadroomReading(
        BinlogRetention(platform, retention_s, "binlog_expire_logs_seconds"),
        "binlog.000002" if closed_ago_s is not None else "binlog.000004",
        closed_ago_s is None,
        last_write,
        NOW,
    )


@pytest.mark.parametrize(
    ("checkpoint", "needed"),
    [
        (f"{UUID}:1-10", "binlog.000002"),  # exactly a file's Previous_gtids: that file
        (f"{UUID}:1-24", "binlog.000002"),  # inside a file: the file it is in
        (f"{UUID}:1-25", "binlog.000003"),
        (f"{UUID}:1-57", "binlog.000004"),  # in the active file
        ("", "binlog.000001"),
    ],
)
def test_the_needed_file_is_the_newest_whose_previous_gtids_the_checkpoint_holds(checkpoint, needed) -> None:
    assert (
        choose_needed_file(FILES, lambda name: GtidSet.parse(PREVIOUS[name]), GtidSet.parse(checkpoint))
        == needed
    )


def test_the_needed_file_is_found_reading_only_the_files_newer_than_it() -> None:
    asked: list[str] = []

    def previous(name: str) -> GtidSet:
        asked.append(name)
        return GtidSet.parse(PREVIOUS[name])

    assert choose_needed_file(FILES, previous, GtidSet.parse(f"{UUID}:1-30")) == "binlog.000003"
    assert asked == ["binlog.000004", "binlog.000003"]


def test_a_checkpoint_no_retained_file_can_serve_has_no_needed_file() -> None:
    retained = FILES[2:]  # 000001 and 000002 purged
    assert (
        choose_needed_file(retained, lambda n: GtidSet.parse(PREVIOUS[n]), GtidSet.parse(f"{UUID}:1-12"))
        is None
    )


def test_headroom_is_the_last_write_plus_retention_minus_now() -> None:
    assert headroom_seconds(_reading(7 * DAY, closed_ago_s=2 * DAY)) == 5 * DAY
    assert headroom_seconds(_reading(HOUR, closed_ago_s=2 * HOUR)) == -HOUR  # due at the next rotation


def test_the_active_file_has_the_whole_retention_and_no_retention_means_no_limit() -> None:
    assert headroom_seconds(_reading(7 * DAY, closed_ago_s=None)) == 7 * DAY
    assert headroom_seconds(_reading(None, closed_ago_s=2 * DAY)) is None


def test_enough_headroom_for_the_missed_runs_is_ok_and_says_until_when() -> None:
    assessment = judge_headroom(_reading(7 * DAY, closed_ago_s=DAY), HeadroomPolicy(DAY, 3))
    assert assessment.level is HeadroomLevel.OK
    assert assessment.message.startswith(
        "binlog headroom 6 d: the checkpoint stays readable until about 2026-11-26"
    )
    assert "binlog.000002 was last written 2026-11-19 12:00:00 UTC" in assessment.message


def test_headroom_below_the_missed_runs_warns_with_the_statement_that_raises_retention() -> None:
    assessment = judge_headroom(_reading(3 * DAY, closed_ago_s=DAY), HeadroomPolicy(DAY, 3))
    assert assessment.level is HeadroomLevel.LOW
    assert "That is less than 3 schedule intervals (3 d)" in assessment.message
    assert "if about 2 more run(s) in a row fail" in assessment.message
    assert "This run must succeed" not in assessment.message
    assert assessment.to_change == "SET PERSIST binlog_expire_logs_seconds = 345600;"  # 4 days
    assert assessment.to_dict()["threshold_s"] == 3 * DAY


def test_headroom_below_one_interval_says_this_run_must_succeed_but_does_not_fail_it() -> None:
    """Failing here would lose the checkpoint that this run can still read."""
    assessment = judge_headroom(_reading(3 * DAY, closed_ago_s=2.5 * DAY), HeadroomPolicy(DAY, 3))
    assert assessment.level is HeadroomLevel.LOW
    assert "This run must succeed: if it fails, the next run can no longer resume" in assessment.message


def test_a_retention_shorter_than_one_interval_is_unsafe_and_names_the_platforms_statement() -> None:
    assessment = judge_headroom(_reading(12 * HOUR, closed_ago_s=HOUR), HeadroomPolicy(DAY, 3))
    assert assessment.level is HeadroomLevel.UNSAFE
    assert (
        "binlog retention 12 h (binlog_expire_logs_seconds) is shorter than the schedule's interval (1 d)"
        in (assessment.message)
    )
    assert "stays readable for 11 h more" in assessment.message
    assert "SET PERSIST binlog_expire_logs_seconds = 345600; and run again before then" in assessment.message
    assert assessment.next_step == NextStep.run_again()  # the sensor adds how: clear this task
    rds = judge_headroom(_reading(0, closed_ago_s=HOUR, platform="rds"), HeadroomPolicy(HOUR, 3))
    assert rds.level is HeadroomLevel.UNSAFE
    assert rds.to_change == "CALL mysql.rds_set_configuration('binlog retention hours', 4);"


def test_no_purge_no_schedule_or_an_unknown_retention_are_logged_not_judged() -> None:
    assert (
        judge_headroom(_reading(None, closed_ago_s=DAY), HeadroomPolicy(DAY)).level is HeadroomLevel.UNLIMITED
    )
    unscheduled = judge_headroom(_reading(HOUR, closed_ago_s=None), HeadroomPolicy(None))
    assert unscheduled.level is HeadroomLevel.OK and unscheduled.message.endswith(
        "no schedule to compare with"
    )
    cloud = HeadroomReading(
        BinlogRetention("cloud_sql", DAY, "Cloud SQL ...", known=False), "binlog.000004", True, None, NOW
    )
    unknown = judge_headroom(cloud, HeadroomPolicy(DAY))
    assert unknown.level is HeadroomLevel.UNKNOWN and unknown.headroom_s is None
    assert 'Set "binlog_retention_hours" in the pipeline configuration' in unknown.message


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(40, "40 s"), (90, "1 min 30 s"), (3 * HOUR, "3 h"), (DAY + 2 * HOUR, "1 d 2 h"), (-5, "0 s")],
)
def test_durations_read_as_a_person_writes_them(seconds: int, text: str) -> None:
    assert format_duration(seconds) == text
