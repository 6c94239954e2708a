"""Turn the OpenLineage provider on for one test, with a transport of the test's choosing.

The suite keeps it off (tests/conftest.py). The provider caches its configuration and its listener
per process (``functools.cache``), so both are cleared when the test starts and again when it ends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


def _clear_caches() -> None:
    from airflow.providers.openlineage import conf as openlineage_conf
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
