"""The rule by which an attempt adopts, stops, sweeps or leaves what an earlier attempt started."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.hooks.attempt_marker import (
    STOPPED_ON_REQUEST,
    Action,
    AttemptMarker,
    Observed,
    ProcessRef,
    TaskAttempt,
    complete_result,
    decide,
)

HOST = "worker-1"
TRY_1 = TaskAttempt("dag", "run_a", "replicate", -1, 1)
TRY_2 = TaskAttempt("dag", "run_a", "replicate", -1, 2)
OTHER_RUN = TaskAttempt("dag", "run_b", "replicate", -1, 1)


def marker(attempt: TaskAttempt | None = TRY_1, *, digest: str = "d1", host: str = HOST,
           started: bool = True, stopping: bool = False) -> AttemptMarker:  # fmt: skip
    return AttemptMarker(
        host=host, attempt=attempt, task_process=ProcessRef(100, 5), config_digest=digest,
        application=ProcessRef(200, 6) if started else None, work_dir="/tmp/x", started_at="t",
        stopping=stopping,
    )  # fmt: skip


def seen(*, app: bool, task: bool = False, result: bool = False) -> Observed:
    return Observed(application_alive=app, task_process_alive=task, has_complete_result=result)


def action(found: AttemptMarker, observed: Observed, current: TaskAttempt | None = TRY_2, digest: str = "d1"):
    return decide(found, observed, host=HOST, current=current, digest=digest).action


def test_a_retry_waits_for_and_adopts_the_running_application_of_its_killed_try() -> None:
    assert action(marker(), seen(app=True)) is Action.WAIT_AND_ADOPT
    # Even while the killed try's task process lives on (its supervisor died, the heartbeat timed out).
    assert action(marker(), seen(app=True, task=True)) is Action.WAIT_AND_ADOPT


def test_a_retry_adopts_the_complete_result_its_killed_try_left() -> None:
    assert action(marker(), seen(app=False, result=True)) is Action.ADOPT_RESULT
    assert action(marker(), seen(app=False, result=False)) is Action.SWEEP


def test_another_configuration_is_not_this_attempts_work_it_is_stopped_not_adopted() -> None:
    assert action(marker(digest="old"), seen(app=True, task=True)) is Action.STOP
    assert action(marker(digest="old"), seen(app=False, result=True)) is Action.SWEEP


def test_an_application_being_stopped_is_never_adopted() -> None:
    assert action(marker(stopping=True), seen(app=True)) is Action.STOP
    assert action(marker(stopping=True), seen(app=False, result=True)) is Action.SWEEP


def test_an_orphan_of_another_run_is_stopped_a_live_attempt_of_another_run_is_left_to_the_lease() -> None:
    assert action(marker(OTHER_RUN), seen(app=True, task=False)) is Action.STOP
    assert action(marker(OTHER_RUN), seen(app=True, task=True)) is Action.LEAVE
    assert action(marker(OTHER_RUN), seen(app=False, result=True)) is Action.SWEEP


def test_an_attempt_outside_a_task_adopts_nothing() -> None:
    assert action(marker(None), seen(app=True), current=None) is Action.STOP
    assert action(marker(TRY_1), seen(app=False, result=True), current=None) is Action.SWEEP


def test_a_marker_of_another_host_is_left_alone() -> None:
    assert action(marker(host="worker-2"), seen(app=False)) is Action.LEAVE


def test_another_runs_dir_is_left_to_its_attempt_while_its_task_process_runs() -> None:
    """Starting its application, or reading the result of one that just ended: it removes its dir."""
    assert action(marker(OTHER_RUN, started=False), seen(app=False, task=True)) is Action.LEAVE
    assert action(marker(OTHER_RUN), seen(app=False, task=True, result=True)) is Action.LEAVE
    assert action(marker(OTHER_RUN, started=False), seen(app=False, task=False)) is Action.SWEEP
    # An earlier try of this task is over for Airflow, even if its process lives on.
    assert action(marker(digest="old"), seen(app=False, task=True)) is Action.SWEEP


@pytest.mark.parametrize(
    ("result", "complete"),
    [({"end_gtids": ""}, True), ({STOPPED_ON_REQUEST: False}, True), ({STOPPED_ON_REQUEST: True}, False),
     ([], False)],
)  # fmt: skip
def test_a_result_written_after_a_stop_request_is_not_complete(result: object, complete: bool) -> None:
    assert complete_result(result) is complete


def test_the_marker_round_trips_through_its_json_form() -> None:
    for found in (marker(), marker(None, started=False, stopping=True)):
        assert AttemptMarker.from_json(found.to_json()) == found
