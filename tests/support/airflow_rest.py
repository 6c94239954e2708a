"""A small client of Airflow 3.3's REST API v2: what a test does in the UI, one method each.

Endpoints and payloads are those of the installed Airflow's OpenAPI spec
(``airflow/api_fastapi/core_api/openapi/v2-rest-api-generated.yaml``). The deployment runs the
simple auth manager with all users admins, whose middleware signs every request: no credentials.

Waits fail with what a person at the UI would look at next: the run's task states, the tail of
each failed task's log and, when nothing moved at all, the tail of the components' logs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx

TERMINAL_RUN_STATES = frozenset({"success", "failed"})
FAILED_TASK_STATES = frozenset({"failed", "upstream_failed", "up_for_retry"})
PAGE_SIZE = 100


class AirflowApiError(RuntimeError):
    """The API refused a request; the message holds the method, path, status and Airflow's answer."""


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError(f"{moment!r} has no time zone; Airflow needs aware datetimes (e.g. tzinfo=UTC)")
    return moment.isoformat()


@dataclass(frozen=True)
class DagRun:
    dag_id: str
    run_id: str
    state: str
    run_type: str
    logical_date: datetime | None
    data_interval_start: datetime | None
    data_interval_end: datetime | None
    conf: dict[str, Any]

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> DagRun:
        return cls(
            dag_id=body["dag_id"],
            run_id=body["dag_run_id"],
            state=body["state"],
            run_type=body["run_type"],
            logical_date=_when(body.get("logical_date")),
            data_interval_start=_when(body.get("data_interval_start")),
            data_interval_end=_when(body.get("data_interval_end")),
            conf=body.get("conf") or {},
        )


@dataclass(frozen=True)
class TaskInstance:
    task_id: str
    map_index: int
    state: str | None
    try_number: int


@dataclass(frozen=True)
class Backfill:
    id: int
    dag_id: str
    reprocess_behavior: str
    completed: bool
    # The logical dates the backfill creates or re-runs, from its dry run just before it was created.
    logical_dates: tuple[datetime, ...]


class AirflowRestClient:
    def __init__(self, base_url: str, *, component_logs: Callable[[], str] | None = None):
        self.base_url = base_url
        self._http = httpx.Client(base_url=base_url, timeout=60)
        self._component_logs = component_logs or (lambda: "")

    # --- plumbing -------------------------------------------------------------------------

    def request(self, method: str, path: str, *, expect: Iterable[int] = (200,), **kwargs) -> Any:
        response = self._http.request(method, path, **kwargs)
        if response.status_code not in tuple(expect):
            raise AirflowApiError(f"{method} {path} answered {response.status_code}: {response.text[:2000]}")
        return response.json() if response.content else None

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/api/v2/monitor/health")

    # --- DAGs -----------------------------------------------------------------------------

    def dag(self, dag_id: str) -> dict[str, Any] | None:
        response = self._http.get(f"/api/v2/dags/{dag_id}")
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise AirflowApiError(
                f"GET /api/v2/dags/{dag_id} answered {response.status_code}: {response.text}"
            )
        return response.json()

    def wait_for_dag(
        self,
        dag_id: str,
        *,
        file_name: str | None = None,
        parsed_after: datetime | None = None,
        timeout_s: float = 120,
    ) -> dict:
        """Until the dag-processor has parsed ``dag_id`` (after ``parsed_after``, for a rewritten file).

        With ``file_name`` (relative to the dags folder) an import error of that file fails at once.
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.dag(dag_id)
            parsed_at = _when(found.get("last_parsed_time")) if found else None
            if found and (parsed_after is None or (parsed_at is not None and parsed_at > parsed_after)):
                return found
            errors = self.import_errors()
            if file_name is not None and any(error["filename"] == file_name for error in errors):
                raise AssertionError(
                    f"DAG file {file_name} failed to import.\n{_describe_import_errors(errors)}"
                )
            time.sleep(1)
        raise AssertionError(
            f"DAG {dag_id} was not parsed within {timeout_s:.0f}s.\n"
            f"Import errors: {_describe_import_errors(self.import_errors())}\n{self._component_logs()}"
        )

    def import_errors(self) -> list[dict[str, Any]]:
        """Files the dag-processor could not import: ``filename`` (in the bundle) and ``stack_trace``."""
        return self.request("GET", "/api/v2/importErrors", params={"limit": PAGE_SIZE})["import_errors"]

    def reparse(self, dag_id: str, *, timeout_s: float = 120) -> dict:
        """Has the dag-processor parse the DAG's file again now (the UI's "Reparse Dag"), and waits for it.

        Needed after changing a file the DAG reads at parse time (a config next to it): only a
        newer mtime of the DAG file itself makes the dag-processor parse it again on its own.
        """
        before = self.request("GET", f"/api/v2/dags/{dag_id}")
        self.request("PUT", f"/api/v2/parseDagFile/{before['file_token']}", expect=(201,))
        return self.wait_for_dag(dag_id, parsed_after=_when(before["last_parsed_time"]), timeout_s=timeout_s)

    def set_paused(self, dag_id: str, paused: bool) -> None:
        self.request("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": paused})

    def unpause(self, dag_id: str) -> None:
        self.set_paused(dag_id, False)

    # --- DAG runs -------------------------------------------------------------------------

    def trigger_run(
        self,
        dag_id: str,
        logical_date: datetime | None,
        conf: dict[str, Any] | None = None,
        *,
        run_id: str | None = None,
    ) -> DagRun:
        body: dict[str, Any] = {
            "logical_date": _iso(logical_date) if logical_date else None,
            "conf": conf or {},
        }
        if run_id is not None:
            body["dag_run_id"] = run_id
        return DagRun.from_json(self.request("POST", f"/api/v2/dags/{dag_id}/dagRuns", json=body))

    def dag_run(self, dag_id: str, run_id: str) -> DagRun:
        return DagRun.from_json(self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}"))

    def dag_runs(
        self, dag_id: str, *, run_types: Iterable[str] = (), states: Iterable[str] = ()
    ) -> list[DagRun]:
        """Every run of the DAG in logical-date order (optionally of the given types/states)."""
        runs: list[DagRun] = []
        while True:
            params = {
                "limit": PAGE_SIZE,
                "offset": len(runs),
                "order_by": ["logical_date", "id"],
                "run_type": list(run_types),
                "state": list(states),
            }
            page = self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns", params=params)
            runs += [DagRun.from_json(body) for body in page["dag_runs"]]
            if not page["dag_runs"] or len(runs) >= page["total_entries"]:
                return runs

    def wait_for_run(
        self, dag_id: str, run_id: str, *, expect: str | None = "success", timeout_s: float = 300
    ) -> DagRun:
        """Until the run is finished; fails with the run's story if it ends other than ``expect``."""
        deadline = time.monotonic() + timeout_s
        while True:
            run = self.dag_run(dag_id, run_id)
            if run.state in TERMINAL_RUN_STATES:
                if expect is not None and run.state != expect:
                    raise AssertionError(
                        f"Run {dag_id}/{run_id} ended {run.state}, expected {expect}.\n"
                        f"{self.describe_run(run)}"
                    )
                return run
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"Run {dag_id}/{run_id} is still {run.state} after {timeout_s:.0f}s.\n"
                    f"{self.describe_run(run)}\n{self._component_logs()}"
                )
            time.sleep(1)

    def set_run_state(self, dag_id: str, run_id: str, state: str) -> DagRun:
        """Marks a run ``success``, ``failed`` or ``queued``, as "Mark run as..." does in the UI."""
        body = self.request(
            "PATCH",
            f"/api/v2/dags/{dag_id}/dagRuns/{run_id}",
            params={"update_mask": ["state"]},
            json={"state": state},
        )
        return DagRun.from_json(body)

    def mark_run_failed(self, dag_id: str, run_id: str) -> DagRun:
        return self.set_run_state(dag_id, run_id, "failed")

    def mark_run_success(self, dag_id: str, run_id: str) -> DagRun:
        return self.set_run_state(dag_id, run_id, "success")

    def clear_run(self, dag_id: str, run_id: str, *, only_failed: bool = False) -> DagRun:
        """Clears the run's task instances (all, or only the failed ones) so the scheduler runs them again."""
        body = self.request(
            "POST",
            f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/clear",
            json={"dry_run": False, "only_failed": only_failed},
        )
        return DagRun.from_json(body)

    def clear_tasks(
        self,
        dag_id: str,
        run_id: str,
        task_ids: Iterable[str] | None = None,
        *,
        only_failed: bool = False,
        include_downstream: bool = False,
    ) -> list[str]:
        """Clears task instances of one run (the given tasks, or all); returns the cleared task ids."""
        body = {
            "dry_run": False,
            "dag_run_id": run_id,
            "task_ids": list(task_ids) if task_ids is not None else None,
            "only_failed": only_failed,
            "include_downstream": include_downstream,
            "reset_dag_runs": True,
        }
        answer = self.request("POST", f"/api/v2/dags/{dag_id}/clearTaskInstances", json=body)
        return [ti["task_id"] for ti in answer["task_instances"]]

    # --- task instances, logs, XCom -------------------------------------------------------

    def task_instances(self, dag_id: str, run_id: str) -> list[TaskInstance]:
        answer = self.request(
            "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances", params={"limit": PAGE_SIZE}
        )
        return [
            TaskInstance(ti["task_id"], ti["map_index"], ti["state"], ti["try_number"])
            for ti in answer["task_instances"]
        ]

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        return {ti.task_id: ti.state for ti in self.task_instances(dag_id, run_id) if ti.map_index == -1}

    def task_log(
        self, dag_id: str, run_id: str, task_id: str, try_number: int, *, map_index: int = -1
    ) -> str:
        """The log of one try as text lines (``[timestamp] level event`` plus any error detail)."""
        answer = self.request(
            "GET",
            f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}",
            params={"full_content": True, "map_index": map_index},
            headers={"Accept": "application/json"},
        )
        return "\n".join(_log_line(entry) for entry in answer["content"])

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value", *, map_index: int = -1):
        """The XCom value as the task pushed it (JSON types), e.g. a task's return value."""
        answer = self.request(
            "GET",
            f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}",
            params={"map_index": map_index},
        )
        value = answer["value"]
        return json.loads(value) if isinstance(value, str) and value[:1] in '{["' else value

    def extra_links(
        self, dag_id: str, run_id: str, task_id: str, *, map_index: int = -1
    ) -> dict[str, str | None]:
        """The task instance's extra links as the UI gets them (name: URL, None when not pushed)."""
        answer = self.request(
            "GET",
            f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/links",
            params={"map_index": map_index},
        )
        return answer["extra_links"]

    def describe_run(self, run: DagRun, *, log_tail_chars: int = 3000) -> str:
        """Task states of the run and the log tails of its failed tasks: what to read after a failure."""
        lines = [f"run {run.run_id} ({run.run_type}, logical date {run.logical_date}): {run.state}"]
        for ti in self.task_instances(run.dag_id, run.run_id):
            lines.append(f"  {ti.task_id}: {ti.state} (try {ti.try_number})")
        for ti in self.task_instances(run.dag_id, run.run_id):
            if ti.state in FAILED_TASK_STATES and ti.state != "upstream_failed" and ti.try_number > 0:
                log = self.task_log(run.dag_id, run.run_id, ti.task_id, ti.try_number, map_index=ti.map_index)
                lines.append(
                    f"--- log of {ti.task_id}, try {ti.try_number} (tail) ---\n{log[-log_tail_chars:]}"
                )
        return "\n".join(lines)

    # --- backfills ------------------------------------------------------------------------

    def create_backfill(
        self,
        dag_id: str,
        from_date: datetime,
        to_date: datetime,
        *,
        reprocess_behavior: str = "none",
        max_active_runs: int = 2,
        run_backwards: bool = False,
        dag_run_conf: dict[str, Any] | None = None,
    ) -> Backfill:
        """A backfill as the UI's dialog makes one (``reprocess_behavior``: none, failed, completed).

        Its dry run first gives the logical dates it will run, which ``wait_for_backfill`` waits for.
        """
        body = {
            "dag_id": dag_id,
            "from_date": _iso(from_date),
            "to_date": _iso(to_date),
            "reprocess_behavior": reprocess_behavior,
            "max_active_runs": max_active_runs,
            "run_backwards": run_backwards,
            # None keeps the conf of the runs it re-runs; {} would replace it.
            "dag_run_conf": dag_run_conf,
        }
        planned = self.request("POST", "/api/v2/backfills/dry_run", json=body)["backfills"]
        created = self.request("POST", "/api/v2/backfills", json=body)
        return Backfill(
            id=created["id"],
            dag_id=dag_id,
            reprocess_behavior=created["reprocess_behavior"],
            completed=created["completed_at"] is not None,
            logical_dates=tuple(_when(entry["logical_date"]) for entry in planned),
        )

    def backfill(self, backfill_id: int) -> dict[str, Any]:
        return self.request("GET", f"/api/v2/backfills/{backfill_id}")

    def cancel_backfill(self, backfill_id: int) -> None:
        """Cancels a backfill: its queued runs are not started, and it is marked complete at once.

        The scheduler marks a backfill whose runs are all finished complete on its own loop, so a
        cancel can meet one already completed (409): the outcome the caller wants either way.
        """
        path = f"/api/v2/backfills/{backfill_id}/cancel"
        response = self._http.request("PUT", path)
        if response.status_code == 409 and "already completed" in response.text:
            return
        if response.status_code != 200:
            raise AirflowApiError(f"PUT {path} answered {response.status_code}: {response.text[:2000]}")

    def wait_for_backfill(
        self, backfill: Backfill, *, timeout_s: float = 300, until_marked_complete: bool = True
    ) -> list[DagRun]:
        """Until every run of the backfill is finished; returns those runs in logical-date order.

        By default also until the scheduler has marked the backfill complete (``completed_at``),
        which it checks only every 30 s: until then the DAG counts as having a running backfill and
        a new one is refused (409 "There is already a running backfill"). Pass
        ``until_marked_complete=False`` to look at the runs as soon as they are finished.
        """
        deadline = time.monotonic() + timeout_s
        wanted = set(backfill.logical_dates)
        while True:
            runs = [
                run
                for run in self.dag_runs(backfill.dag_id, run_types=["backfill"])
                if run.logical_date in wanted
            ]
            finished = len(runs) == len(wanted) and all(run.state in TERMINAL_RUN_STATES for run in runs)
            if finished and (not until_marked_complete or self.backfill(backfill.id)["completed_at"]):
                return runs
            if time.monotonic() > deadline:
                stories = "\n".join(self.describe_run(run) for run in runs)
                raise AssertionError(
                    f"Backfill {backfill.id} of {backfill.dag_id} did not finish within {timeout_s:.0f}s: "
                    f"{len(runs)} of {len(wanted)} runs exist.\n{stories}\n{self._component_logs()}"
                )
            time.sleep(1)

    # --- connections ----------------------------------------------------------------------

    def create_connection(self, connection_id: str, conn_type: str, **fields: Any) -> None:
        """Creates (or replaces) a connection; ``extra`` may be a dict. Fields: host, port, login, ..."""
        if isinstance(fields.get("extra"), dict):
            fields["extra"] = json.dumps(fields["extra"])
        self.delete_connection(connection_id)
        body = {"connection_id": connection_id, "conn_type": conn_type, **fields}
        self.request("POST", "/api/v2/connections", json=body, expect=(201,))

    def delete_connection(self, connection_id: str) -> None:
        self.request("DELETE", f"/api/v2/connections/{connection_id}", expect=(204, 404))

    def close(self) -> None:
        self._http.close()


def _describe_import_errors(errors: list[dict[str, Any]]) -> str:
    return "\n".join(f"{error['filename']}:\n{error['stack_trace']}" for error in errors) or "none"


def _log_line(entry: Any) -> str:
    if isinstance(entry, str):
        return entry
    stamp = f"[{entry['timestamp']}] " if entry.get("timestamp") else ""
    text = f"{stamp}{entry.get('level', '')} {entry.get('event', '')}".strip()
    for error in entry.get("error_detail") or []:
        text += "\n" + _traceback_text(error)
    return text


def _traceback_text(error: dict[str, Any]) -> str:
    """A structured exception of a task log (``error_detail``) as Python prints a traceback."""
    frames = [
        f'  File "{frame.get("filename")}", line {frame.get("lineno")}, in {frame.get("name")}'
        for frame in error.get("frames", [])
    ]
    return "\n".join(
        ["Traceback (most recent call last):", *frames, f"{error.get('exc_type')}: {error.get('exc_value')}"]
    )
