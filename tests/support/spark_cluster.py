"""A Spark standalone cluster (one master, one worker) on loopback, started from the pyspark install.

The master and the worker are ``spark-class`` JVMs in their own sessions, on free ports (RPC and
web UI), with logs and the worker's work folder under the given folder; executors the worker
launches for an application are its children. Stopping kills both process groups.
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


@dataclass
class SparkStandaloneCluster:
    folder: Path
    worker_cores: int = 2
    worker_memory: str = "1g"
    master_port: int = field(default_factory=free_port)
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def work_dir(self) -> Path:
        return self.folder / "work"

    def start(self) -> SparkStandaloneCluster:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(self.master_port), "--webui-port", str(free_port()),
        )  # fmt: skip
        self._wait_for("master", r"I have been elected leader|Starting Spark master")
        self._launch(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            self.master_url,
            "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
            "--cores", str(self.worker_cores), "--memory", self.worker_memory,
            "--work-dir", str(self.work_dir),
        )  # fmt: skip
        self._wait_for("worker", r"Successfully registered with master")
        return self

    def _launch(self, role: str, main_class: str, *arguments: str) -> None:
        log = (self.folder / f"{role}.log").open("w")
        environment = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}
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
        """One folder per application the worker ran executors for."""
        return sorted(self.work_dir.glob("app-*")) if self.work_dir.exists() else []

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
