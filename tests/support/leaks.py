"""Where a credential must never appear: process arguments and XCom (logs: capfd; the lake: its objects)."""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any

import psutil


class CommandLineRecorder(threading.Thread):
    """Records the argv of every descendant of this process (spark-submit, its JVM, the Python
    driver, Spark's workers) as it runs: ``/proc/<pid>/cmdline`` sampled every ``interval_s``."""

    def __init__(self, interval_s: float = 0.2) -> None:
        super().__init__(name="command-line-recorder", daemon=True)
        self.interval_s = interval_s
        self.command_lines: set[str] = set()
        self._stop_requested = threading.Event()

    def run(self) -> None:
        while not self._stop_requested.wait(self.interval_s):
            for process in psutil.Process().children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    self.command_lines.add(" ".join(process.cmdline()))

    def __enter__(self) -> CommandLineRecorder:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop_requested.set()
        self.join()


def dag_xcom_values(dag_id: str) -> list[Any]:
    """Every XCom value every run of ``dag_id`` left, deserialised."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(XComModel).filter(XComModel.dag_id == dag_id).all()
        return [XComModel.deserialize_value(row) for row in rows]


def containing(texts: list[str] | set[str], *secrets: str) -> list[str]:
    """The texts that contain any of ``secrets``."""
    return [text for text in texts if any(secret in text for secret in secrets)]


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)
