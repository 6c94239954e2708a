"""Which attempt started an application, and what the next attempt does with it: the marker and the rule.

Invariant: an application an attempt started is found by the next attempt on the same host, whatever
ended the first one (``kill -9`` of the task process, a crashed worker process, a mark-failed or a
timeout whose ``on_kill`` never ran), and it is either adopted or stopped before the next attempt
starts its own; it is never left running beside it, and its work dir never outlives the recovery.

How it holds: every application runs in a work dir of a known per-application root
(:mod:`.attempt_recovery`), and the dir's ``attempt.json`` (:class:`AttemptMarker`) names the
application before it starts: the host, the Airflow try (dag, run, task, map index, try number),
the task process and, once started, the application's process group (its leader's pid and start
time, so a reused pid is not mistaken for it), the digest of its configuration, its work dir.
Each attempt reads the markers under its root and acts on each by one rule, :func:`decide`:

- **Same task instance, same configuration** (a retry, a "clear"): the earlier application was doing
  exactly this attempt's work. Running: wait for it and adopt its result (stopping it would throw
  away its in-flight batches and a Spark start-up). Finished with a complete result: adopt that
  result. Either way the published record counts what the run applied, although the attempt that
  applied it died (the retry used to publish ``already_applied: true, rows_applied: 0``).
- **Anything else running whose task process is gone** (an orphan of another run, or of this task
  with another configuration): stop it (SIGTERM to its group: the binlog application commits its
  pending batch and exits; SIGKILL after a grace period) before starting, instead of being fenced
  by its lease until it finishes a long catch-up.
- **Running with its task process alive, another task instance**: a live attempt of another run
  (two runs of one pipeline at once); left alone, the pipeline's lease decides who writes.
- **Gone**: its work dir is removed, unless the task process of another task instance still runs
  (starting its application, or reading its result): that attempt removes its own dir.
- **Another host** (a shared temporary folder): left alone; its processes are not visible here.
  A worker host that crashed takes its applications with it; the lease (``lease_s``) lets the next
  attempt on another host in once it expires.

A result file is complete only when the application ended on its own: the binlog application
marks a result written after a stop request (``stopped_on_request``), and an attempt that stops an
application notes it in the marker first (``stopping``); neither is adopted.

Guarded by ``tests/unit/airflow/operators/test_attempt_marker.py`` (the rule) and
``tests/integration/test_orphan_recovery.py`` (a real spark-submit whose task process is killed).
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import asdict, dataclass, replace
from typing import Any

MARKER_FILE = "attempt.json"
RESULT_FILE = "result.json"
STOPPED_ON_REQUEST = "stopped_on_request"
"""Key of a result file written after a stop request (SIGTERM): the run ended early, not at its end."""


@dataclass(frozen=True)
class TaskAttempt:
    """One Airflow try of a task instance."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    try_number: int

    def same_task_instance(self, other: TaskAttempt | None) -> bool:
        return other is not None and (self.dag_id, self.run_id, self.task_id, self.map_index) == (
            other.dag_id,
            other.run_id,
            other.task_id,
            other.map_index,
        )

    def describe(self) -> str:
        index = f"[{self.map_index}]" if self.map_index >= 0 else ""
        return f"{self.dag_id}.{self.task_id}{index} of run {self.run_id}, try {self.try_number}"


@dataclass(frozen=True)
class ProcessRef:
    """A process by pid and start time (clock ticks since boot; None where unknown): a pid alone may
    have been reused by an unrelated process since."""

    pid: int
    start_ticks: int | None


@dataclass(frozen=True)
class AttemptMarker:
    """``attempt.json``: who started the application in this work dir, and what it runs."""

    host: str
    attempt: TaskAttempt | None
    """None when the application was started outside a task (a test calling the operator directly)."""
    task_process: ProcessRef
    application: ProcessRef | None
    """The application's process group leader (spark-submit, or the engine process); None until started."""
    config_digest: str
    work_dir: str
    started_at: str
    stopping: bool = False
    """Set before an attempt stops the application: a result it writes afterwards is not adopted."""

    def started(self, application: ProcessRef) -> AttemptMarker:
        return replace(self, application=application)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> AttemptMarker:
        data = json.loads(text)
        attempt = data.get("attempt")
        application = data.get("application")
        return cls(
            host=str(data["host"]),
            attempt=TaskAttempt(**attempt) if attempt else None,
            task_process=ProcessRef(**data["task_process"]),
            application=ProcessRef(**application) if application else None,
            config_digest=str(data["config_digest"]),
            work_dir=str(data["work_dir"]),
            started_at=str(data["started_at"]),
            stopping=bool(data.get("stopping", False)),
        )


def config_digest(config_json: str) -> str:
    """What identifies the work an application does: the digest of its configuration file."""
    return hashlib.sha256(config_json.encode()).hexdigest()


def complete_result(result: Any) -> bool:
    """Whether a result file's content is that of an application that ended on its own."""
    return isinstance(result, dict) and not result.get(STOPPED_ON_REQUEST, False)


class Action(enum.Enum):
    ADOPT_RESULT = "adopt its result"
    WAIT_AND_ADOPT = "wait for it and adopt its result"
    STOP = "stop it"
    SWEEP = "remove its work dir"
    LEAVE = "leave it"


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str


@dataclass(frozen=True)
class Observed:
    """What the recovering attempt sees of a marker's processes and files, on its own host."""

    application_alive: bool
    task_process_alive: bool
    has_complete_result: bool


def decide(
    marker: AttemptMarker, observed: Observed, *, host: str, current: TaskAttempt | None, digest: str
) -> Decision:
    """The one rule (see the module docstring): what the attempt ``current`` does with ``marker``."""
    if marker.host != host:
        return Decision(Action.LEAVE, f"it runs on {marker.host}; the pipeline's lease covers it")
    ours = current is not None and current.same_task_instance(marker.attempt)
    same_work = ours and marker.config_digest == digest and not marker.stopping
    if not observed.application_alive:
        if observed.task_process_alive and not ours:
            # Starting its application, or reading its result: that attempt removes its own dir.
            return Decision(Action.LEAVE, "its task is running and removes its work dir itself")
        if same_work and observed.has_complete_result:
            return Decision(Action.ADOPT_RESULT, "it finished this task's work after its attempt died")
        return Decision(Action.SWEEP, "its application is gone")
    if same_work:
        return Decision(Action.WAIT_AND_ADOPT, "it is doing this task's work (same run, same configuration)")
    if ours:
        return Decision(Action.STOP, "an earlier try of this task started it with another configuration")
    if observed.task_process_alive:
        return Decision(Action.LEAVE, "its task is running; the pipeline's lease decides who writes")
    return Decision(Action.STOP, "its task process is gone (an orphan)")
