"""The engine runs inside Spark where Airflow is not installed: it must never import Airflow."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import airflow_mysql_cdc.engine

ENGINE_DIR = Path(airflow_mysql_cdc.engine.__file__).parent


def _imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


def test_no_engine_module_names_airflow_in_an_import() -> None:
    offenders = {
        str(path.relative_to(ENGINE_DIR)): sorted(
            m for m in _imported_modules(path) if m.split(".")[0] == "airflow"
        )
        for path in ENGINE_DIR.rglob("*.py")
    }
    assert {name: modules for name, modules in offenders.items() if modules} == {}


def test_engine_imports_in_a_python_where_airflow_cannot_be_imported() -> None:
    """Catches indirect imports too (engine -> some helper -> airflow)."""
    program = """
import importlib, pkgutil, sys
class BlockAirflow:
    def find_spec(self, name, path=None, target=None):
        if name == "airflow" or name.startswith("airflow."):
            raise ImportError("Airflow is blocked: the engine must not import " + name)
sys.meta_path.insert(0, BlockAirflow())
import airflow_mysql_cdc.engine as engine
for info in pkgutil.walk_packages(engine.__path__, "airflow_mysql_cdc.engine."):
    importlib.import_module(info.name)
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
