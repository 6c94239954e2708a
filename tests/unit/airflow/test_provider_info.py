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
from airflow_mysql_cdc.engine.values.tls import TLS_MODES
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


def test_every_extra_link_an_operator_shows_is_listed_and_imports() -> None:
    from airflow.sdk import BaseOperatorLink

    listed = set(get_provider_info()["extra-links"])
    for path in listed:
        module, name = path.rsplit(".", 1)
        assert issubclass(getattr(importlib.import_module(module), name), BaseOperatorLink), path
    shown: set[str] = set()
    for layer in ("operators", "sensors"):
        root = importlib.import_module(f"airflow_mysql_cdc.{layer}")
        for module_info in pkgutil.walk_packages(root.__path__, f"airflow_mysql_cdc.{layer}."):
            for _, value in inspect.getmembers(importlib.import_module(module_info.name), inspect.isclass):
                if issubclass(value, BaseOperator) and value.__module__.startswith("airflow_mysql_cdc"):
                    shown |= {
                        f"{type(link).__module__}.{type(link).__name__}"
                        for link in value.operator_extra_links
                    }
    assert shown, "no operator shows a link: the walk is broken"
    assert shown <= listed  # Airflow's API server finds a link's class through this list


def test_the_tls_mode_picker_offers_every_mode_the_engine_knows_and_names_the_empty_choice() -> None:
    (connection_type,) = get_provider_info()["connection-types"]
    schema = connection_type["conn-fields"]["ssl_mode"]["schema"]
    assert schema["enum"] == [None, *TLS_MODES]
    # The UI renders an enum member without a display name as its JSON text: "null" for None.
    assert set(schema["values_display"]) == {"null", *TLS_MODES}
    assert schema["values_display"]["null"] == "(automatic)"
