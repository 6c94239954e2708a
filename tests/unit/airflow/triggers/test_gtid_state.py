"""GtidStateTrigger: survives serialization to the triggerer, fires the right event, and depends
only on hooks (never on sensors)."""

from __future__ import annotations

import ast
import asyncio
import importlib
import time
from pathlib import Path

import pytest

import airflow_mysql_cdc.triggers
from airflow_mysql_cdc.triggers.gtid_state import GtidStateTrigger
from tests.unit.airflow.fake_server import serve_gtid_state

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def _trigger(**overrides: object) -> GtidStateTrigger:
    arguments = {
        "conn_id": "cdc_source",
        "kind": "resumable",
        "gtid_set": f"{UUID}:1-50",
        "on_purged": "resnapshot",
        "poll_interval_s": 0.1,
        "deadline": 1_900_000_000.5,
        **overrides,
    }
    return GtidStateTrigger(**arguments)  # type: ignore[arg-type]


def _events(trigger: GtidStateTrigger) -> list[dict]:
    async def collect() -> list[dict]:
        return [event.payload async for event in trigger.run()]

    return asyncio.run(collect())


def test_serialize_then_rebuild_from_the_classpath_gives_an_equal_trigger() -> None:
    original = _trigger()
    classpath, kwargs = original.serialize()
    module_name, class_name = classpath.rsplit(".", 1)
    rebuilt = getattr(importlib.import_module(module_name), class_name)(**kwargs)
    assert type(rebuilt) is GtidStateTrigger
    assert rebuilt.serialize() == (classpath, kwargs)
    assert {name: getattr(rebuilt, name) for name in kwargs} == {
        name: getattr(original, name) for name in kwargs
    }


def test_a_met_condition_fires_one_met_event_with_the_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    serve_gtid_state(monkeypatch, executed=f"{UUID}:1-9")
    events = _events(_trigger(kind="reached", gtid_set=f"{UUID}:1-9"))
    assert [event["state"] for event in events] == ["met"]
    assert events[0]["payload"]["missing"] == ""


def test_purged_binlogs_fire_a_failed_event_under_on_purged_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    serve_gtid_state(monkeypatch, executed=f"{UUID}:1-100", purged=f"{UUID}:1-60")
    (event,) = _events(_trigger(on_purged="fail"))
    assert event["state"] == "failed" and f"{UUID}:51-60" in event["message"]


def test_past_the_deadline_a_waiting_condition_fires_timeout_with_the_last_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    serve_gtid_state(monkeypatch, executed=f"{UUID}:1-3")
    started = time.monotonic()
    (event,) = _events(_trigger(kind="reached", gtid_set=f"{UUID}:1-6", deadline=time.time() + 0.3))
    assert event["state"] == "timeout"
    assert event["message"] == f"the server has not executed 3 GTID(s) of the target yet: {UUID}:4-6"
    assert time.monotonic() - started < 30  # it stopped polling at the deadline


def test_no_trigger_module_imports_from_sensors() -> None:
    imports: dict[str, list[str]] = {}
    for path in Path(airflow_mysql_cdc.triggers.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        modules = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        modules += [
            alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        ]
        imports[path.name] = [module for module in modules if module.startswith("airflow_mysql_cdc.sensors")]
    assert {name: found for name, found in imports.items() if found} == {}
