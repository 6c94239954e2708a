"""Airflow's stats backend replaced by a recorder, for tests of what the package emits.

The package emits through ``airflow.sdk.observability.stats`` (:mod:`airflow_mysql_cdc.hooks.metrics`);
re-initialising that module with a factory is how the Task SDK itself picks a backend, so the code
under test runs unchanged, legacy names included.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Recorder:
    """A stats backend that keeps every call: (kind, name, value, tags)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, float, dict[str, Any] | None]] = []

    def incr(self, stat: str, count: int = 1, rate: float = 1, *, tags: dict[str, Any] | None = None) -> None:
        self.calls.append(("incr", stat, count, tags))

    def gauge(self, stat: str, value: float, rate: float = 1, delta: bool = False, *, tags=None) -> None:
        self.calls.append(("gauge", stat, value, tags))

    def timing(self, stat: str, dt: float, *, tags: dict[str, Any] | None = None) -> None:
        self.calls.append(("timing", stat, dt, tags))

    def tagged(self) -> dict[tuple[str, str], list[tuple[float, dict[str, Any]]]]:
        """(kind, name) -> [(value, tags)] of the calls that carried tags (the names without variables)."""
        found: dict[tuple[str, str], list[tuple[float, dict[str, Any]]]] = {}
        for kind, name, value, tags in self.calls:
            if tags is not None:
                found.setdefault((kind, name), []).append((value, tags))
        return found


@contextmanager
def recording_stats() -> Iterator[Recorder]:
    from airflow.sdk._shared.observability.metrics.base_stats_logger import NoStatsLogger
    from airflow.sdk.observability import stats

    backend = Recorder()
    stats.initialize(factory=lambda: backend, export_legacy_names=True)
    try:
        yield backend
    finally:
        stats.initialize(factory=NoStatsLogger, export_legacy_names=True)
