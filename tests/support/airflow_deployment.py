"""A real Airflow 3.3 deployment for the scheduler tests, driven through its REST API as users drive the UI.

What it starts, all on 127.0.0.1 and free ports, in one folder of the test session:

- a PostgreSQL server for the metadata database (``tests/support/postgres_server.py``), migrated
  with ``airflow db migrate``;
- ``airflow scheduler`` with the LocalExecutor (``parallelism`` 4 for 2 cores), ``airflow
  dag-processor``, ``airflow triggerer`` (the project's sensors can defer) and ``airflow
  api-server``, each in its own process group with its log in ``<folder>/logs/<component>.log``.

Why PostgreSQL: SQLite serialises every writer; under a scheduler, a dag-processor, an api-server
and task processes writing at once, backfills failed with "database is locked". PostgreSQL is also
what production deployments use.

The REST API runs the simple auth manager with ``simple_auth_manager_all_admins``: its middleware
signs every request as an admin, so clients send no credentials (``tests/support/airflow_rest.py``).
Task processes reach the api-server's execution API at ``[core] execution_api_server_url``.

Tests write DAG files into ``dags_folder`` (``write_dag_file`` writes atomically, so the
dag-processor never parses half a file). A new file is found within ``[dag_processor]
refresh_interval`` (2 s); a rewritten file is parsed again as soon as its mtime is newer than its
last parse; unchanged files are not re-parsed for an hour (``min_file_process_interval``), which is
what keeps the idle dag-processor cheap. So after changing a file a DAG reads at parse time (a
config next to it), call ``AirflowRestClient.reparse(dag_id)``.

The deployment is shared by the whole session: tests give their DAGs unique ids and create the
connections they need through the REST API (``AirflowRestClient.create_connection``). A deployment
of their own with ``AIRFLOW_CONN_*`` variables set at start is ``AirflowDeployment(folder,
extra_env={...}).start()``.

Every process is stopped at the end: each component's process group, every descendant (task
processes run in process groups of their own, Spark JVMs under them), and as a last sweep any
process whose environment carries this deployment's ``AIRFLOW_HOME``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
from cryptography.fernet import Fernet

from tests.support.airflow_rest import AirflowRestClient
from tests.support.postgres_server import PostgresServer, free_port

VENV_BIN = Path(sys.executable).parent
AIRFLOW = VENV_BIN / "airflow"
MIGRATE_TIMEOUT_S = 600.0
HEALTHY_TIMEOUT_S = 240.0
# Nothing of a test deployment needs a graceful end (its database is thrown away), and the
# triggerer alone waits 10 s for its triggers on SIGTERM.
STOP_GRACE_S = 5.0

# Variables of the test process that must not leak into the deployment: the test conftest points
# AIRFLOW_HOME and the dags folder at the dag.test() setup, and tests set AIRFLOW_CONN_* for theirs.
_NOT_INHERITED_PREFIXES = ("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_VAR_")


@dataclass
class AirflowDeployment:
    """Scheduler, dag-processor, triggerer and api-server on a PostgreSQL metadata database."""

    folder: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    with_triggerer: bool = True
    api_port: int = field(default_factory=free_port)
    postgres: PostgresServer = field(default_factory=PostgresServer)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    # Seconds each start step took (postgres, migrate, healthy) and in all (total).
    start_timings: dict[str, float] = field(default_factory=dict)
    _environment: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def airflow_home(self) -> Path:
        return self.folder / "airflow-home"

    @property
    def dags_folder(self) -> Path:
        return self.folder / "dags"

    @property
    def logs_folder(self) -> Path:
        return self.folder / "logs"

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def client(self) -> AirflowRestClient:
        return AirflowRestClient(self.api_url, component_logs=self.component_log_tails)

    def start(self) -> AirflowDeployment:
        """Starts everything and waits until the api-server reports every component healthy.

        If any step fails, what was started is stopped before the error propagates.
        """
        for folder in (self.airflow_home, self.dags_folder, self.logs_folder):
            folder.mkdir(parents=True, exist_ok=True)
        atexit.register(self.stop)
        try:
            self._start_steps()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_steps(self) -> None:
        started = step_started = time.monotonic()

        def step_done(name: str) -> None:
            nonlocal step_started
            self.start_timings[name] = time.monotonic() - step_started
            step_started = time.monotonic()

        self.postgres.start()
        step_done("postgres")
        self._environment = self._build_environment()
        self._migrate()
        step_done("migrate")
        self._launch("scheduler", "scheduler", "--skip-serve-logs")
        self._launch("dag-processor", "dag-processor")
        if self.with_triggerer:
            self._launch("triggerer", "triggerer", "--skip-serve-logs")
        self._launch("api-server", "api-server", "--host", "127.0.0.1", "--port", str(self.api_port))
        self._wait_until_healthy()
        step_done("healthy")
        self.start_timings["total"] = time.monotonic() - started

    def write_dag_file(self, file_name: str, source: str) -> Path:
        """Writes a DAG file (or a config file next to DAGs) atomically into the dags folder."""
        target = self.dags_folder / file_name
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(source)
        partial.replace(target)
        return target

    def component_log_tails(self, characters: int = 3000) -> str:
        parts = []
        for name in self.processes:
            log = self.logs_folder / f"{name}.log"
            text = log.read_text(errors="replace")[-characters:] if log.exists() else "(no log)"
            parts.append(f"--- {name} ({log}) ---\n{text}")
        return "\n".join(parts)

    def cpu_seconds(self) -> dict[str, float]:
        """User + system CPU seconds each component's live process tree has used so far."""
        used = {}
        for name, process in self.processes.items():
            total = 0.0
            for member in _tree(process.pid):
                try:
                    times = member.cpu_times()
                    total += times.user + times.system
                except psutil.Error:
                    continue
            used[name] = total
        return used

    def stop(self) -> None:
        """Stops every component and what it started, then PostgreSQL. Safe to call twice."""
        known = {member.pid: member for process in self.processes.values() for member in _tree(process.pid)}
        for name in ("scheduler", "triggerer", "dag-processor", "api-server"):
            process = self.processes.get(name)
            if process is not None and process.poll() is None:
                _signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for process in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
        leftovers = list(known.values()) + self._processes_of_this_deployment()
        for member in leftovers:
            try:
                if os.getpgid(member.pid) == member.pid:  # a group leader: its group is ours too
                    _signal_group(member.pid, signal.SIGKILL)
                member.kill()
            except (psutil.Error, ProcessLookupError):
                pass
        for process in self.processes.values():
            process.wait()
        self.processes.clear()
        self.postgres.stop()
        atexit.unregister(self.stop)

    def _build_environment(self) -> dict[str, str]:
        inherited = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(_NOT_INHERITED_PREFIXES) and name != "AIRFLOW_HOME"
        }
        configuration = {
            "AIRFLOW_HOME": str(self.airflow_home),
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.postgres.sqlalchemy_url,
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            "AIRFLOW__CORE__FERNET_KEY": Fernet.generate_key().decode(),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.api_url}/execution/",
            # A rewritten DAG file reaches the database (and the scheduler's cache) within 2 s, not 30.
            "AIRFLOW__CORE__MIN_SERIALIZED_DAG_UPDATE_INTERVAL": "2",
            "AIRFLOW__API__BASE_URL": self.api_url,
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.api_port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(64),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "2",
            "AIRFLOW__DAG_PROCESSOR__BUNDLE_REFRESH_CHECK_INTERVAL": "1",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
            "AIRFLOW__DAG_PROCESSOR__PRINT_STATS_INTERVAL": "3600",
            # A killed task process is noticed in about a minute and a half instead of five.
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "90",
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
            # No component serves logs (--skip-serve-logs: the api-server reads the local files);
            # the ports are free ones anyway, so nothing ever binds Airflow's fixed defaults.
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
        }
        return inherited | configuration | self.extra_env

    def _migrate(self) -> None:
        log = self.logs_folder / "db-migrate.log"
        with log.open("wb") as output:
            result = subprocess.run(
                [str(AIRFLOW), "db", "migrate"],
                env=self._environment,
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=MIGRATE_TIMEOUT_S,
            )
        if result.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed ({result.returncode}):\n{log.read_text()[-4000:]}")

    def _launch(self, name: str, *arguments: str) -> None:
        with (self.logs_folder / f"{name}.log").open("ab") as log:
            self.processes[name] = subprocess.Popen(
                [str(AIRFLOW), *arguments],
                env=self._environment,
                cwd=self.folder,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def _wait_until_healthy(self) -> None:
        """Until the api-server answers and reports every started component healthy."""
        wanted = {"metadatabase", "scheduler", "dag_processor"} | (
            {"triggerer"} if self.with_triggerer else set()
        )
        deadline = time.monotonic() + HEALTHY_TIMEOUT_S
        last_answer = "no answer yet"
        while time.monotonic() < deadline:
            dead = {
                name: process.returncode
                for name, process in self.processes.items()
                if process.poll() is not None
            }
            if dead:
                raise RuntimeError(
                    f"Airflow components exited during start: {dead}\n{self.component_log_tails()}"
                )
            try:
                health = httpx.get(f"{self.api_url}/api/v2/monitor/health", timeout=5).json()
            except (httpx.HTTPError, ValueError) as error:
                last_answer = repr(error)
            else:
                last_answer = str(health)
                if all((health.get(part) or {}).get("status") == "healthy" for part in wanted):
                    return
            time.sleep(1)
        raise RuntimeError(
            f"The Airflow deployment was not healthy within {HEALTHY_TIMEOUT_S:.0f}s; last health answer: "
            f"{last_answer}\n{self.component_log_tails()}"
        )

    def _processes_of_this_deployment(self) -> list[psutil.Process]:
        """Any process whose environment carries this deployment's AIRFLOW_HOME (orphans included)."""
        home = str(self.airflow_home)
        found = []
        for process in psutil.process_iter():
            try:
                if process.pid != os.getpid() and process.environ().get("AIRFLOW_HOME") == home:
                    found.append(process)
            except psutil.Error:
                continue
        return found


def _tree(pid: int) -> Iterable[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _signal_group(pid: int, signal_number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal_number)
