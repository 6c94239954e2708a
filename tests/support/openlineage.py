"""Turn the OpenLineage provider on for one test, with a transport of the test's choosing.

The suite keeps it off (tests/conftest.py). The provider caches its configuration and its listener
per process (``functools.cache``), so both are cleared when the test starts and again when it ends.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def _clear_caches() -> None:
    # The module itself: the package's ``conf`` attribute may be Airflow's configuration instead.
    openlineage_conf = importlib.import_module("airflow.providers.openlineage.conf")
    from airflow.providers.openlineage.plugins import listener

    for value in vars(openlineage_conf).values():
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()
    listener.get_openlineage_listener.cache_clear()


@contextmanager
def openlineage_on(monkeypatch: pytest.MonkeyPatch, transport: dict[str, Any]) -> Iterator[None]:
    with monkeypatch.context() as patch:
        patch.setenv("AIRFLOW__OPENLINEAGE__DISABLED", "False")
        patch.setenv("AIRFLOW__OPENLINEAGE__TRANSPORT", json.dumps(transport))
        _clear_caches()
        try:
            yield
        finally:
            _clear_caches()
    _clear_caches()


@contextmanager
def openlineage_listener_registered() -> Iterator[None]:
    """The provider's listener, alone, on the Task SDK's listener manager, for ``dag.test`` here.

    Its plugin adds one only if OpenLineage is on when the plugins are first loaded in the process,
    which may have happened with it off (then none is there) or inside an earlier such test (then
    that test's listener, with its transport, is): every OpenLineage listener is removed, a fresh one
    added, and removed again when the test ends.
    """
    from airflow.providers.openlineage.plugins.listener import OpenLineageListener, get_openlineage_listener
    from airflow.sdk.listener import get_listener_manager

    manager = get_listener_manager()

    def remove_all() -> None:
        for plugin in list(manager.pm.get_plugins()):
            if isinstance(plugin, OpenLineageListener):
                manager.pm.unregister(plugin)

    remove_all()
    manager.add_listener(get_openlineage_listener())
    try:
        yield
    finally:
        remove_all()


def completed_events(events_file: Path, job_name: str, *, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """The COMPLETE events of ``job_name`` in the file transport's file; the listener emits them from
    a worker of its own, so they are waited for."""
    deadline = time.monotonic() + timeout_s
    while True:
        events = []
        if events_file.exists():
            for line in events_file.read_text().splitlines():
                event = json.loads(line)
                if event.get("eventType") == "COMPLETE" and event.get("job", {}).get("name") == job_name:
                    events.append(event)
        if events or time.monotonic() > deadline:
            return events
        time.sleep(0.5)


def clear_openlineage_caches() -> None:
    """Forget the provider's cached configuration (after a test changed it)."""
    _clear_caches()
