"""A StatsD server on loopback for one test, and Airflow's stats pointed at it.

Airflow builds its stats backend from ``[metrics]`` when the task process starts
(``stats.initialize`` in the Task SDK's task runner; ``dag.test`` runs the tasks in this process, where
that happened long before): the configuration is set, then the backend initialised again, and put
back to none when the test ends.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


class StatsdListener:
    """Keeps every datagram received on a UDP port of 127.0.0.1, one metric line each."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.port = self.socket.getsockname()[1]
        self.lines: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.socket.recv(65536)
            except TimeoutError:
                continue
            self.lines.extend(data.decode(errors="replace").splitlines())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.socket.close()

    def values(self, name: str) -> list[str]:
        """The values (``40|c``) received for the metric ``name`` (prefix included)."""
        return [line.partition(":")[2] for line in self.lines if line.partition(":")[0] == name]


@contextmanager
def statsd_listener(monkeypatch: pytest.MonkeyPatch, prefix: str = "airflow") -> Iterator[StatsdListener]:
    from airflow.sdk._shared.observability.metrics.base_stats_logger import NoStatsLogger
    from airflow.sdk.observability import stats
    from airflow.sdk.observability.metrics.stats_utils import get_stats_factory

    listener = StatsdListener()
    try:
        with monkeypatch.context() as patch:
            patch.setenv("AIRFLOW__METRICS__STATSD_ON", "True")
            patch.setenv("AIRFLOW__METRICS__STATSD_HOST", "127.0.0.1")
            patch.setenv("AIRFLOW__METRICS__STATSD_PORT", str(listener.port))
            patch.setenv("AIRFLOW__METRICS__STATSD_PREFIX", prefix)
            stats.initialize(factory=get_stats_factory(), export_legacy_names=True)
            try:
                yield listener
            finally:
                stats.initialize(factory=NoStatsLogger, export_legacy_names=True)
    finally:
        listener.close()
