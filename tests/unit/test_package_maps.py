"""Each folder's ``__init__`` is its map, and a map that drifts misleads the newcomer it is for.

Held here: every module and sub-package of a folder is named in its map (as ``name``, ``name/`` or
:mod:`~...name`); every module a map lists as an entry exists; every test the package's docstrings,
the docs and the README cite by name exists under that name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "airflow_mysql_cdc"
TESTS = ROOT / "tests"

_NAMED = re.compile(r"``([A-Za-z_][A-Za-z0-9_]*)(?:\.py|/)?``|:mod:`[~.\w]*?\.?([A-Za-z_][A-Za-z0-9_]*)`")
_ENTRY = re.compile(r"^\s*(?:-|\d+\.)\s+``([A-Za-z_][A-Za-z0-9_]*)(/|\.py)?``", re.MULTILINE)
_CITED_TEST = re.compile(r"(?<!def )\btest_[A-Za-z0-9_*]+(?:\.py)?")


def _packages() -> list[Path]:
    return sorted(path.parent for path in PACKAGE.rglob("__init__.py"))


def _modules(folder: Path) -> set[str]:
    files = {path.stem for path in folder.glob("*.py") if path.name != "__init__.py"}
    return files | {path.name for path in folder.iterdir() if (path / "__init__.py").exists()}


def _map(folder: Path) -> str:
    return ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""


@pytest.mark.parametrize("folder", _packages(), ids=lambda folder: str(folder.relative_to(ROOT)))
def test_every_package_map_names_every_module_of_its_folder(folder: Path) -> None:
    named = {first or second for first, second in _NAMED.findall(_map(folder))}
    missing = sorted(_modules(folder) - named)
    assert not missing, f"{folder.relative_to(ROOT)}/__init__.py does not name: {', '.join(missing)}"


@pytest.mark.parametrize("folder", _packages(), ids=lambda folder: str(folder.relative_to(ROOT)))
def test_every_module_a_map_lists_exists(folder: Path) -> None:
    listed = {name for name, _ in _ENTRY.findall(_map(folder))}
    unknown = sorted(listed - _modules(folder))
    assert not unknown, f"{folder.relative_to(ROOT)}/__init__.py lists modules that do not exist: {unknown}"


def _existing_tests() -> tuple[set[str], set[str]]:
    files = {path.name for path in TESTS.rglob("test_*.py")} | {
        path.name for path in TESTS.rglob("*") if path.is_dir()
    }
    functions: set[str] = set()
    for path in TESTS.rglob("*.py"):
        functions |= set(re.findall(r"def (test_\w+)", path.read_text()))
    return files, functions


def _cites_an_existing_test(cited: str, files: set[str], functions: set[str]) -> bool:
    if cited.endswith(".py"):
        return any(Path(name).match(cited) for name in files) if "*" in cited else cited in files
    if cited.endswith("_") or "*" in cited:  # an abbreviation: "test_every_type_maps_..."
        prefix = cited.rstrip("_*")
        return any(name.startswith(prefix) for name in functions)
    return cited in functions or f"{cited}.py" in files or cited in files


def test_every_test_cited_by_name_exists() -> None:
    files, functions = _existing_tests()
    citing = [*PACKAGE.rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    unknown = [
        f"{path.relative_to(ROOT)}: {cited}"
        for path in citing
        for cited in sorted(set(_CITED_TEST.findall(path.read_text())))
        if not _cites_an_existing_test(cited, files, functions)
    ]
    assert not unknown, "tests cited that do not exist under that name:\n" + "\n".join(unknown)
