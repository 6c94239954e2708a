"""Recovery of what a killed attempt left, with real processes in their own groups (no Spark)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from airflow_mysql_cdc.hooks.attempt_marker import AttemptMarker, TaskAttempt, config_digest
from airflow_mysql_cdc.hooks.attempt_recovery import (
    AdoptedApplicationStopped,
    ApplicationAttempts,
    group_alive,
    process_ref,
    work_root,
)

TRY_1 = TaskAttempt("dag", "run_a", "replicate", -1, 1)
TRY_2 = TaskAttempt("dag", "run_a", "replicate", -1, 2)
OTHER_RUN = TaskAttempt("dag", "run_b", "replicate", -1, 1)
CONFIG = json.dumps({"pipeline_id": "p"})
log = logging.getLogger(__name__)
_NEVER_EXITED: list[object] = []


@pytest.fixture(autouse=True)
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def dead_task_process() -> int:
    """The pid of a process that ran and is gone (a task process killed with -9)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def killed_attempt(attempt: TaskAttempt, script: str, *, task_pid: int | None = None,
                   config: str = CONFIG) -> tuple[Path, subprocess.Popen]:  # fmt: skip
    """What an attempt killed with -9 leaves: its work dir, marker and a running application."""
    attempts = ApplicationAttempts("app", log, attempt=attempt)
    context = attempts.own(config)
    _NEVER_EXITED.append(context)  # the attempt "died": its cleanup never runs
    own = context.__enter__()
    application = subprocess.Popen([sys.executable, "-c", script, str(own.work_dir)], start_new_session=True)
    own.started(application.pid)
    marker = AttemptMarker.from_json((own.work_dir / "attempt.json").read_text())
    dead = process_ref(task_pid if task_pid is not None else dead_task_process())
    (own.work_dir / "attempt.json").write_text(replace(marker, task_process=dead).to_json())
    return own.work_dir, application


SLEEPS = "import time; time.sleep(120)"
FINISHES = (
    "import json, pathlib, sys, time; time.sleep(1.5); "
    "pathlib.Path(sys.argv[1], 'result.json').write_text(json.dumps({'end_gtids': 'x', 'rows': 7}))"
)


def test_a_retry_waits_for_its_killed_trys_application_and_adopts_its_result() -> None:
    work_dir, application = killed_attempt(TRY_1, FINISHES)
    attempts = ApplicationAttempts("app", log, attempt=TRY_2)
    adopted = attempts.recover(CONFIG)
    assert adopted == {"end_gtids": "x", "rows": 7}
    # Whose work it was: the run's counts say that an earlier try applied it (runs/run_counts.py).
    assert attempts.adopted_from == "dag.replicate of run run_a, try 1"
    assert application.poll() is not None and not work_dir.exists() and not work_root("app").exists()


def test_a_retry_adopts_the_result_its_killed_trys_application_left_when_it_finished() -> None:
    work_dir, application = killed_attempt(TRY_1, FINISHES)
    application.wait()
    assert ApplicationAttempts("app", log, attempt=TRY_2).recover(CONFIG) == {"end_gtids": "x", "rows": 7}
    assert not work_dir.exists()


def test_an_orphan_of_another_run_is_stopped_and_its_work_dir_removed() -> None:
    work_dir, application = killed_attempt(OTHER_RUN, SLEEPS)
    leader = process_ref(application.pid)
    assert ApplicationAttempts("app", log, attempt=TRY_1, stop_grace_s=5).recover(CONFIG) is None
    application.wait(timeout=5)
    assert not group_alive(leader) and not work_dir.exists()


def test_an_orphan_of_this_task_with_another_configuration_is_stopped_not_adopted() -> None:
    work_dir, application = killed_attempt(TRY_1, SLEEPS, config='{"pipeline_id": "p", "start": "old"}')
    attempts = ApplicationAttempts("app", log, attempt=TRY_2, stop_grace_s=5)
    assert attempts.recover(CONFIG) is None and attempts.adopted_from is None
    assert application.wait(timeout=5) is not None and not work_dir.exists()


def test_a_live_attempt_of_another_run_is_left_running_for_the_lease_to_decide() -> None:
    import os

    work_dir, application = killed_attempt(OTHER_RUN, SLEEPS, task_pid=os.getpid())
    try:
        assert ApplicationAttempts("app", log, attempt=TRY_1).recover(CONFIG) is None
        assert application.poll() is None and work_dir.exists()
    finally:
        application.kill()
        application.wait()


def test_an_attempts_work_dir_is_removed_when_it_ends_however_it_ends() -> None:
    attempts = ApplicationAttempts("app", log, attempt=TRY_1)
    with pytest.raises(RuntimeError), attempts.own(CONFIG) as own:
        marker = AttemptMarker.from_json((own.work_dir / "attempt.json").read_text())
        assert marker.attempt == TRY_1 and marker.config_digest == config_digest(CONFIG)
        assert own.work_dir.parent == work_root("app")
        raise RuntimeError("the application failed")
    assert not work_root("app").exists(), "the empty root is removed with the last dir"


def test_an_application_started_but_not_yet_named_in_the_marker_is_found_by_its_arguments() -> None:
    """The attempt was killed between starting the application and writing its pid to the marker."""
    attempts = ApplicationAttempts("app", log, attempt=OTHER_RUN)
    context = attempts.own(CONFIG)
    _NEVER_EXITED.append(context)
    own = context.__enter__()
    application = subprocess.Popen(
        [sys.executable, "-c", SLEEPS, str(own.work_dir / "config.json")], start_new_session=True
    )
    marker = AttemptMarker.from_json((own.work_dir / "attempt.json").read_text())
    (own.work_dir / "attempt.json").write_text(
        replace(marker, task_process=process_ref(dead_task_process())).to_json()
    )
    assert ApplicationAttempts("app", log, attempt=TRY_1, stop_grace_s=5).recover(CONFIG) is None
    assert application.wait(timeout=5) is not None and not own.work_dir.exists()


def test_on_kill_while_waiting_for_an_adopted_application_stops_it_and_starts_nothing() -> None:
    work_dir, application = killed_attempt(TRY_1, SLEEPS)
    attempts = ApplicationAttempts("app", log, attempt=TRY_2, stop_grace_s=5)
    on_kill = threading.Timer(1.0, attempts.stop_adopted)  # what on_kill does (mark failed)
    on_kill.start()
    with pytest.raises(AdoptedApplicationStopped, match="was stopped while this attempt waited for it"):
        attempts.recover(CONFIG)
    on_kill.join()
    assert application.wait(timeout=5) is not None and not work_dir.exists()


def test_each_lake_has_its_own_snapshot_application_root_so_recovery_never_meets_another_pipeline() -> None:
    from airflow_mysql_cdc.operators.snapshot import snapshot_application_name

    shop, billing = snapshot_application_name("s3://lake/shop"), snapshot_application_name("/data/billing")
    assert shop.startswith("mysql-cdc-snapshot-") and shop != billing
    assert shop == snapshot_application_name("s3://lake/shop")  # the same lake, the same root
    assert work_root(shop) != work_root(billing)
