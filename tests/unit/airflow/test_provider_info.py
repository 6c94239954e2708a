"""The provider description lists every hook, operator, sensor and trigger, as first-party providers do."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from pathlib import Path

import airflow
import jsonschema
from airflow.sdk import BaseHook, BaseOperator
from airflow.triggers.base import BaseTrigger

import airflow_mysql_cdc
from airflow_mysql_cdc.get_provider_info import get_provider_info

LAYERS = {"hooks": BaseHook, "operators": BaseOperator, "sensors": BaseOperator, "triggers": BaseTrigger}


def _listed_modules(info: dict, layer: str) -> set[str]:
    return {module for entry in info.get(layer, []) for module in entry["python-modules"]}


def _classes_defined_in(package: str, base: type) -> set[str]:
    """Modules of ``package`` that define a subclass of ``base``."""
    found: set[str] = set()
    root = importlib.import_module(package)
    for module_info in pkgutil.walk_packages(root.__path__, f"{package}."):
        module = importlib.import_module(module_info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if value.__module__ == module.__name__ and issubclass(value, base):
                found.add(module.__name__)
    return found


def test_the_description_is_valid_against_airflows_provider_schema() -> None:
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    integrations = {entry["integration-name"] for entry in info["integrations"]}
    for layer in LAYERS:
        assert {entry["integration-name"] for entry in info[layer]} <= integrations, layer


def test_every_listed_module_imports() -> None:
    info = get_provider_info()
    for layer in LAYERS:
        for module in _listed_modules(info, layer):
            assert importlib.import_module(module).__name__ == module


def test_every_hook_operator_sensor_and_trigger_of_the_package_is_listed() -> None:
    info = get_provider_info()
    package = airflow_mysql_cdc.__name__
    for layer, base in LAYERS.items():
        defined = _classes_defined_in(f"{package}.{layer}", base)
        assert defined, f"no {layer} found: the walk is broken"
        assert defined <= _listed_modules(info, layer), layer


def test_the_connection_types_hook_is_in_a_listed_hook_module() -> None:
    info = get_provider_info()
    hook_class = info["connection-types"][0]["hook-class-name"]
    assert hook_class.rsplit(".", 1)[0] in _listed_modules(info, "hooks")


def test_every_listed_extra_link_imports_and_is_an_operator_link() -> None:
    from airflow.sdk import BaseOperatorLink

    for path in get_provider_info()["extra-links"]:
        module, name = path.rsplit(".", 1)
        assert issubclass(getattr(importlib.import_module(module), name), BaseOperatorLink), path
