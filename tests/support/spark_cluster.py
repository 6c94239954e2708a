"""A Spark standalone cluster (one master, two workers) on loopback, started from the pyspark install;
and an executor Python with only the engine's documented executor requirements.

The master and the workers are ``spark-class`` JVMs in their own sessions, on free ports (RPC and
web UI), with logs, each worker's work folder and its local folder (``SPARK_LOCAL_DIRS``) under the
given folder; executors a worker launches for an application are its children, each in its own JVM.
Stopping kills every process group.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_CLASS = Path(sys.executable).with_name("spark-class")
SPARK_HOME = Path(pyspark.__file__).parent
START_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


EXECUTOR_PACKAGES = ("pyarrow", "pymysql", "pymysqlreplication", "packaging", "zstandard")
"""What ``pip install pyarrow PyMySQL mysql-replication zstandard`` puts in an executor's Python
(docs/deployment.md); no Airflow, no deltalake, not this package (the operators ship it)."""


def lean_executor_python(folder: Path) -> Path:
    """A virtualenv of this interpreter holding only :data:`EXECUTOR_PACKAGES` (linked from this one)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    ours = Path(pyspark.__file__).parent.parent
    for package in EXECUTOR_PACKAGES:
        (site / package).symlink_to(ours / package)
    return python


@dataclass
class SparkStandaloneCluster:
    folder: Path
    workers: int = 2
    worker_cores: int = 1
    worker_memory: str = "1g"
    master_port: int = field(default_factory=free_port)
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def work_dir(self) -> Path:
        return self.folder / "work"

    @property
    def local_dir(self) -> Path:
        """The workers' ``SPARK_LOCAL_DIRS`` (one folder each below): where a worker makes each
        application's ``executor-…`` folders, the executors' block managers and Spark scratch files."""
        return self.folder / "local"

    def start(self) -> SparkStandaloneCluster:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(self.master_port), "--webui-port", str(free_port()),
        )  # fmt: skip
        self._wait_for("master", r"I have been elected leader|Starting Spark master")
        for number in range(1, self.workers + 1):
            self._launch(
                f"worker{number}",
                "org.apache.spark.deploy.worker.Worker",
                self.master_url,
                "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
                "--cores", str(self.worker_cores), "--memory", self.worker_memory,
                "--work-dir", str(self.work_dir / f"worker{number}"),
                local_dir=self.local_dir / f"worker{number}",
            )  # fmt: skip
        for number in range(1, self.workers + 1):
            self._wait_for(f"worker{number}", r"Successfully registered with master")
        return self

    def _launch(self, role: str, main_class: str, *arguments: str, local_dir: Path | None = None) -> None:
        log = (self.folder / f"{role}.log").open("w")
        # Executors inherit the worker's environment: no PYTHONPATH of the test run may lend them the
        # package (they must get it from the operators' --py-files, as on a real cluster).
        inherited = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        environment = {
            **inherited, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1",  # see SPARK_SUBMIT_OPTS in conftest.py
        }  # fmt: skip
        if local_dir is not None:
            local_dir.mkdir(parents=True, exist_ok=True)
            environment["SPARK_LOCAL_DIRS"] = str(local_dir)
        self.processes.append(
            subprocess.Popen(
                [str(SPARK_CLASS), main_class, *arguments],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=environment,
                start_new_session=True,
            )
        )

    def _wait_for(self, role: str, pattern: str) -> None:
        log = self.folder / f"{role}.log"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if re.search(pattern, log.read_text(errors="replace")):
                return
            if any(process.poll() is not None for process in self.processes):
                break
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the Spark {role} did not start; its log:\n{log.read_text()[-3000:]}")

    def application_folders(self) -> list[Path]:
        """One folder per application and worker that ran executors for it."""
        return sorted(self.work_dir.glob("worker*/app-*")) if self.work_dir.exists() else []

    def worker_files(self) -> list[Path]:
        """Every file under the workers' work folders and local folders, now."""
        return sorted(
            path for root in (self.work_dir, self.local_dir) for path in root.rglob("*") if path.is_file()
        )

    def worker_files_holding(self, *secrets: str) -> list[str]:
        """The workers' files whose bytes hold any of ``secrets`` (as ``path: secret``), now; a file
        deleted while it is read counts as holding nothing."""
        found = []
        for path in self.worker_files():
            try:
                content = path.read_bytes()
            except (FileNotFoundError, PermissionError):
                continue
            found += [f"{path}: {secret}" for secret in secrets if secret.encode() in content]
        return found

    def stop(self) -> None:
        for process in reversed(self.processes):
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    process.wait(timeout=15)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self.processes.clear()
