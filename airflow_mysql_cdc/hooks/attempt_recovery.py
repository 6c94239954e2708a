"""Work dirs under a known root, and the recovery of the applications earlier attempts left there.

Invariant: no work dir outlives its attempt. An attempt's dir is removed when it ends (and the
root with it when it is empty), by ``on_kill`` when Airflow stops the task (within the 5 s Airflow
gives it: :data:`ON_KILL_GRACE_S`); one whose attempt was killed before it could (``kill -9``) is
removed by the next attempt of any task running the same application on this host, after that
attempt adopted or stopped what ran in it (:func:`.attempt_marker.decide` says which). The root
is per application name (``<temp dir>/airflow-mysql-cdc/<name>``; the binlog application's name
holds the pipeline id, the snapshot application's a digest of its lake location), so a recovery
reads only the markers of applications of its own pipeline.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from airflow.sdk.exceptions import AirflowException

from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.hooks.attempt_marker import (
    MARKER_FILE,
    RESULT_FILE,
    Action,
    AttemptMarker,
    Observed,
    ProcessRef,
    TaskAttempt,
    complete_result,
    config_digest,
    decide,
)

ROOT_FOLDER = "airflow-mysql-cdc"
STOP_GRACE_S = 30.0
"""How long a stopped application has to commit its pending batch after SIGTERM, before SIGKILL."""
WAIT_POLL_S = 1.0
ON_KILL_GRACE_S = 2.5
"""How long ``on_kill`` gives an application after SIGTERM, before SIGKILL. Airflow runs ``on_kill``
from the task process's SIGTERM handler and SIGKILLs that process 5 s after the SIGTERM ("mark
failed/success" from the UI, a worker shutdown: the Task SDK supervisor's ``kill(SIGTERM, force=True)``,
``escalation_delay`` 5 s, not configurable). The stop and the removal of the work dir must both fit
in those 5 s, or the dir waits for the next attempt on this host (which removes it). An application
killed at 2.5 s is one killed with -9, which the lake survives (the next run applies what it had not
committed)."""
ON_KILL_REAP_S = 0.5
"""How long ``on_kill`` waits for the group to vanish after SIGKILL before it removes the work dir
anyway: SIGKILL cannot be refused, and a member already dead may linger as a zombie until its new
parent reaps it. Waiting ``ON_KILL_GRACE_S`` again here once took on_kill past Airflow's 5 s."""


class AdoptedApplicationStopped(AirflowException):
    """``on_kill`` stopped the application this attempt waited for; a retry continues from the lake."""


def work_root(name: str) -> Path:
    """The folder holding the work dirs of application ``name`` on this host."""
    return Path(tempfile.gettempdir()) / ROOT_FOLDER / name


def process_ref(pid: int) -> ProcessRef:
    return ProcessRef(pid=pid, start_ticks=_start_ticks(pid))


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux ``/proc``), None elsewhere or if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count fields after its last ")".
    return int(stat.rpartition(")")[2].split()[19])


def process_alive(ref: ProcessRef) -> bool:
    """The process itself is running (not a zombie) and is the one the ref names."""
    try:
        os.kill(ref.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if _zombie(ref.pid):
        return False
    return ref.start_ticks is None or _start_ticks(ref.pid) in (None, ref.start_ticks)


def group_alive(leader: ProcessRef) -> bool:
    """Any process of the group ``leader`` started is running. A group id is not reused while the
    group has a member, so a live group whose leader is gone is still the one the ref names."""
    if _start_ticks(leader.pid) not in (None, leader.start_ticks) and leader.start_ticks is not None:
        return False  # the pid now names another process, which is also another group's leader
    try:
        os.killpg(leader.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _only_zombies(leader.pid)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return False


def _only_zombies(group: int) -> bool:
    """The group's members are all zombies (an exited leader not yet reaped by its parent)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return False
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            if int(fields[2]) == group:
                members.append(fields[0])
    return bool(members) and all(state == "Z" for state in members)


def group_started_in(work_dir: Path) -> ProcessRef | None:
    """The process group of an application whose arguments name ``work_dir`` (its config file)."""
    proc = Path("/proc")
    needle = str(work_dir).encode()
    for entry in proc.iterdir() if proc.is_dir() else ():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if needle in (entry / "cmdline").read_bytes():
                return process_ref(os.getpgid(int(entry.name)))
    return None


def stop_group(leader: ProcessRef, *, grace_s: float = STOP_GRACE_S, reap_s: float | None = None) -> None:
    """SIGTERM the group (the binlog application commits its pending batch and exits), SIGKILL what
    is left after ``grace_s``; returns once the group is gone, or ``reap_s`` (default ``grace_s``)
    after the SIGKILL."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s if reap_s is None else reap_s)):
        if not group_alive(leader):
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader.pid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and group_alive(leader):
            time.sleep(0.1)


def current_attempt() -> TaskAttempt | None:
    """The Airflow try running this code, None outside a task."""
    try:
        from airflow.sdk import get_current_context

        ti: Any = get_current_context()["ti"]
    except Exception:  # no task is running (a test calling the operator directly)
        return None
    map_index = getattr(ti, "map_index", -1)
    return TaskAttempt(
        dag_id=str(ti.dag_id),
        run_id=str(ti.run_id),
        task_id=str(ti.task_id),
        map_index=-1 if map_index is None else int(map_index),
        try_number=int(ti.try_number or 0),
    )


@dataclass
class OwnAttempt:
    """This attempt's work dir and marker."""

    work_dir: Path
    marker: AttemptMarker

    def started(self, pid: int) -> None:
        """Name the application in the marker, as soon as it runs."""
        self.marker = self.marker.started(process_ref(pid))
        _write_marker(self.work_dir, self.marker)

    def stopping(self) -> None:
        """Note, before stopping the application, that a result it writes now is not to be adopted."""
        if self.work_dir.is_dir():
            self.marker = replace(self.marker, stopping=True)
            _write_marker(self.work_dir, self.marker)

    def remove(self) -> None:
        """Remove the work dir (and the root when it is empty) now, not when the attempt unwinds:
        ``on_kill`` calls it once the application is gone, because Airflow may SIGKILL the task
        process before its ``finally`` runs (:data:`ON_KILL_GRACE_S`)."""
        _remove_work_dir(self.work_dir)


def _write_marker(work_dir: Path, marker: AttemptMarker) -> None:
    temporary = work_dir / (MARKER_FILE + ".tmp")
    temporary.write_text(marker.to_json())
    os.replace(temporary, work_dir / MARKER_FILE)


class ApplicationAttempts:
    """Recovery of earlier attempts' applications, then this attempt's own work dir.

    :param name: the application's name (its root folder); ``log`` receives one line per decision.
    """

    def __init__(self, name: str, log: Any, *, attempt: TaskAttempt | None = None,
                 stop_grace_s: float = STOP_GRACE_S) -> None:  # fmt: skip
        self.name = name
        self.root = work_root(name)
        self.log = log
        self.attempt = attempt if attempt is not None else current_attempt()
        self.host = socket.gethostname()
        self.stop_grace_s = stop_grace_s
        self._adopted: tuple[Path, AttemptMarker] | None = None
        self.adopted_from: str | None = None
        """The earlier try whose application's result :meth:`recover` returned (None: none adopted):
        what it applied, an earlier try applied (:mod:`airflow_mysql_cdc.runs.run_counts`)."""

    def recover(self, config_json: str) -> JsonObject | None:
        """Act on every marker under the root; the result of an application adopted, if one was.

        Blocks while an adopted application runs: it is doing this attempt's work.
        """
        digest = config_digest(config_json)
        adopted: JsonObject | None = None
        for work_dir in sorted(self.root.glob("*")) if self.root.is_dir() else ():
            marker = _read_marker(work_dir)
            if marker is None:
                self._sweep_unmarked(work_dir)
                continue
            if marker.application is None and marker.host == self.host:
                # Killed between starting the application and naming it: found by its arguments.
                found = group_started_in(work_dir)
                marker = marker.started(found) if found is not None else marker
            decision = decide(marker, self._observe(work_dir, marker), host=self.host,
                              current=self.attempt, digest=digest)  # fmt: skip
            if decision.action is Action.LEAVE:
                continue
            who = marker.attempt.describe() if marker.attempt else "a run outside a task"
            pid = marker.application.pid if marker.application else None
            self.log.warning(
                "Found the application (pid %s, started %s by %s) in %s: %s, to %s",
                pid, marker.started_at, who, work_dir, decision.reason, decision.action.value,
            )  # fmt: skip
            if decision.action is Action.WAIT_AND_ADOPT and adopted is None:
                assert marker.application is not None
                self.log.warning("Waiting for it to finish; its output went to the log of %s", who)
                self._adopted = (work_dir, marker)
                try:
                    while group_alive(marker.application):
                        time.sleep(WAIT_POLL_S)
                except BaseException:  # a task timeout: the application goes with this attempt
                    self.stop_adopted()
                    raise
                if self._adopted is None:  # on_kill stopped it meanwhile: nothing more may start
                    shutil.rmtree(work_dir, ignore_errors=True)
                    raise AdoptedApplicationStopped(
                        f"{who}'s application was stopped while this attempt waited for it (the task "
                        "was marked failed or killed); the next attempt continues from the lake"
                    )
                self._adopted = None
                adopted = self._adopt(work_dir)
                self.adopted_from = who if adopted is not None else None
            elif decision.action is Action.ADOPT_RESULT and adopted is None:
                adopted = self._adopt(work_dir)
                self.adopted_from = who if adopted is not None else None
            elif decision.action in (Action.STOP, Action.WAIT_AND_ADOPT):
                assert marker.application is not None
                _write_marker(work_dir, replace(marker, stopping=True))
                stop_group(marker.application, grace_s=self.stop_grace_s)
            shutil.rmtree(work_dir, ignore_errors=True)
        if adopted is not None:
            with contextlib.suppress(OSError):  # not empty: another attempt's dir is in it
                self.root.rmdir()
        return adopted

    def _adopt(self, work_dir: Path) -> JsonObject | None:
        result = _complete_result(work_dir)
        if result is None:
            self.log.warning("It ended without a complete result; this attempt runs the application")
        else:
            self.log.warning("Adopted its result: it applied this run's work, whichever attempt ran it")
        return result

    def stop_adopted(self, *, grace_s: float | None = None, reap_s: float | None = None) -> None:
        """Stop the application this attempt is waiting for (``on_kill``: mark failed, a timeout):
        adopted, it is this attempt's and ends with it. ``grace_s``: after SIGTERM, before SIGKILL
        (default ``stop_grace_s``; ``on_kill`` passes :data:`ON_KILL_GRACE_S` and
        :data:`ON_KILL_REAP_S`)."""
        if self._adopted is None:
            return
        work_dir, marker = self._adopted
        self._adopted = None
        assert marker.application is not None
        self.log.warning(
            "Stopping the adopted application (pid %d): this attempt ends", marker.application.pid
        )
        with contextlib.suppress(OSError):
            _write_marker(work_dir, replace(marker, stopping=True))
        stop_group(marker.application, grace_s=self.stop_grace_s if grace_s is None else grace_s,
                   reap_s=reap_s)  # fmt: skip
        shutil.rmtree(work_dir, ignore_errors=True)

    def _observe(self, work_dir: Path, marker: AttemptMarker) -> Observed:
        return Observed(
            application_alive=marker.application is not None and group_alive(marker.application),
            task_process_alive=process_alive(marker.task_process),
            has_complete_result=_complete_result(work_dir) is not None,
        )

    def _sweep_unmarked(self, work_dir: Path) -> None:
        """A dir without a marker: its attempt died between creating it and writing the marker (its
        application never started). Removed once it is older than a minute (not one being made now)."""
        with contextlib.suppress(OSError):
            if time.time() - work_dir.stat().st_mtime > 60:
                shutil.rmtree(work_dir, ignore_errors=True)

    @contextlib.contextmanager
    def own(self, config_json: str) -> Iterator[OwnAttempt]:
        """This attempt's work dir, with its marker; removed when the attempt ends, however it ends
        short of the process being killed (then the next attempt removes it)."""
        work_dir = self._new_work_dir()
        own = OwnAttempt(
            work_dir=work_dir,
            marker=AttemptMarker(
                host=self.host,
                attempt=self.attempt,
                task_process=process_ref(os.getpid()),
                application=None,
                config_digest=config_digest(config_json),
                work_dir=str(work_dir),
                started_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            ),
        )
        try:
            _write_marker(work_dir, own.marker)
            yield own
        finally:
            _remove_work_dir(work_dir)

    def _new_work_dir(self) -> Path:
        """A fresh dir in the root; again if another attempt removed the root, empty, meanwhile."""
        for _ in range(5):
            self.root.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                return Path(tempfile.mkdtemp(prefix=_dir_prefix(self.name, self.attempt), dir=self.root))
        raise FileNotFoundError(f"{self.root} kept disappearing while a work dir was made in it")


def _dir_prefix(name: str, attempt: TaskAttempt | None) -> str:
    """``<name>-try<N>-``: the application's name then a dash, as in a plain temporary dir's name,
    so ``ps`` shows which application and try a process belongs to (tests find them so too)."""
    return f"{name}-{'local' if attempt is None else f'try{attempt.try_number}'}-"


def _remove_work_dir(work_dir: Path) -> None:
    shutil.rmtree(work_dir, ignore_errors=True)
    with contextlib.suppress(OSError):  # not empty: another attempt's dir is in it
        work_dir.parent.rmdir()


def _read_marker(work_dir: Path) -> AttemptMarker | None:
    try:
        return AttemptMarker.from_json((work_dir / MARKER_FILE).read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _complete_result(work_dir: Path) -> JsonObject | None:
    try:
        result = json.loads((work_dir / RESULT_FILE).read_text())
    except (OSError, ValueError):
        return None
    return result if complete_result(result) else None
