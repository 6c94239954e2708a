"""The package's folders are layers: a module imports only from its own layer or the layers below.

The engine's folders have their own order (tests/unit/test_engine_layers.py); here the engine is one
layer, below the Airflow side, which is ordered like a first-party provider: hooks own connections,
triggers poll through hooks, sensors defer to triggers, runs decide what a pipeline run does (its
place in the checkpoint chain, its segment), operators carry runs out, and the pipeline builds the
DAG from operators. The one import that ran back up (``operators/replicate.py`` importing
``pipeline/segment.py``) made the DAG factory a dependency of its own operators.
"""

from __future__ import annotations

import ast
from pathlib import Path

import airflow_mysql_cdc

PACKAGE = "airflow_mysql_cdc"
ROOT = Path(airflow_mysql_cdc.__file__).parent
# Lower rank first; a module may import a module of equal or lower rank.
LAYER_RANK = {
    "engine": 0,
    "hooks": 1,
    "triggers": 2,
    "sensors": 3,
    "runs": 4,
    "operators": 5,
    "pipeline": 6,
}
TOP_LEVEL = {"__init__.py", "get_provider_info.py"}
"""The package's map and the provider's metadata: they import only the package root."""

LAKE_DOOR = "runs/lake.py"
LAKE_READERS = (f"{PACKAGE}.engine.lake", f"{PACKAGE}.engine.snapshot")
LAKE_CONFIGURATION = {
    f"{PACKAGE}.engine.lake.storage",
    f"{PACKAGE}.engine.lake.layout",
    f"{PACKAGE}.engine.lake.maintenance.policy",
    f"{PACKAGE}.engine.lake.maintenance.config",
    f"{PACKAGE}.engine.lake.maintenance.report",
    f"{PACKAGE}.engine.snapshot.config",
    f"{PACKAGE}.engine.snapshot.result",
}
"""Storage options, the layout, and the maintenance and snapshot applications' contracts (their
configurations and results) are configuration and results, not reads of the lake; none imports
Delta or Arrow (test_application_contracts checks it in a fresh interpreter)."""


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _imports(tree: ast.AST, *, with_type_checking: bool = True) -> set[str]:
    """Every module of the package that ``tree`` imports (``from p import m``, ``p`` a package: ``p.m``)."""
    imported: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if not with_type_checking and _is_type_checking_block(node):
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            is_package = (ROOT.parent / node.module.replace(".", "/")).is_dir()
            names = [f"{node.module}.{alias.name}" for alias in node.names] if is_package else [node.module]
            imported |= set(names)
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        stack.extend(ast.iter_child_nodes(node))
    return {name for name in imported if name == PACKAGE or name.startswith(f"{PACKAGE}.")}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYER_RANK else None


def _modules() -> list[tuple[Path, Path]]:
    return [(path, path.relative_to(ROOT)) for path in sorted(ROOT.rglob("*.py"))]


def upward_imports(root: Path = ROOT) -> list[str]:
    """``"<module> imports <name>"`` for every import of a higher layer under ``root``."""
    upward = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if len(relative.parts) == 1:
            continue  # TOP_LEVEL: checked by test_the_top_level_imports_only_the_package_root
        own = LAYER_RANK[relative.parts[0]]
        for name in _imports(ast.parse(path.read_text())):
            layer = _layer(name)
            if layer is not None and LAYER_RANK[layer] > own:
                upward.append(f"{relative} imports {name}")
    return sorted(upward)


def test_every_folder_of_the_package_has_a_layer() -> None:
    folders = {path.name for path in ROOT.iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders == set(LAYER_RANK)
    assert {path.name for path in ROOT.glob("*.py")} == TOP_LEVEL


def test_the_top_level_imports_only_the_package_root() -> None:
    for name in TOP_LEVEL:
        assert _imports(ast.parse((ROOT / name).read_text())) <= {f"{PACKAGE}.__version__"}


def test_every_import_of_the_package_points_down_the_layers() -> None:
    assert upward_imports() == []


def test_an_operator_importing_the_pipeline_is_an_upward_import(tmp_path: Path) -> None:
    """The import this test was written against: the DAG factory's module used by an operator."""
    modules = {
        "operators/replicate.py": f"from {PACKAGE}.pipeline.segment import plan_segment\n",
        "runs/segment.py": f"from {PACKAGE}.hooks.mysql_cdc import MySqlCdcHook\n",
    }
    for name, source in modules.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(source)
    assert upward_imports(tmp_path) == [f"operators/replicate.py imports {PACKAGE}.pipeline.segment"]


def test_the_airflow_side_reads_the_lake_through_one_module() -> None:
    """Delta and Arrow cost every DAG parse; one module keeps their imports lazy (runs/lake.py's doc).

    Imports for annotations only (under ``TYPE_CHECKING``) load nothing and are not reads.
    """
    elsewhere = []
    for path, relative in _modules():
        if relative.parts[0] == "engine" or relative.as_posix() == LAKE_DOOR:
            continue
        for name in _imports(ast.parse(path.read_text()), with_type_checking=False):
            reads = name.startswith(LAKE_READERS) and not any(
                name == allowed or name.startswith(f"{allowed}.") for allowed in LAKE_CONFIGURATION
            )
            if reads:
                elsewhere.append(f"{relative} imports {name}")
    assert sorted(elsewhere) == []


def _module_name(relative: Path) -> str:
    parts = relative.with_suffix("").parts
    return ".".join((PACKAGE, *(parts[:-1] if parts[-1] == "__init__" else parts)))


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (lazy imports inside functions included; imports for
    annotations only are not), each import resolved to a module (``from m import name``: ``m``)."""
    modules = {_module_name(relative) for _, relative in _modules()}
    graph: dict[str, set[str]] = {}
    for path, relative in _modules():
        targets = set()
        for name in _imports(ast.parse(path.read_text()), with_type_checking=False):
            while name not in modules and "." in name:
                name = name.rpartition(".")[0]
            targets.add(name)
        module = _module_name(relative)
        # A package's map importing nothing but its own modules is not a cycle worth a refusal.
        graph[module] = {target for target in targets if target != module and target != PACKAGE}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_anywhere_in_the_package() -> None:
    """A circle hides which module is the lower one; the last one (``operators/links.py`` ↔
    ``operators/spark_application.py`` through a lazy ``driver_conf`` import) is gone since the
    defaults moved to ``hooks/spark_defaults.py`` (issue 35)."""
    assert _cycles(_import_graph()) == []


def test_the_circle_finder_finds_a_lazy_import_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_operators_supervise_no_process() -> None:
    """Process ownership (process groups, ``/proc``, signals) belongs to the hooks, the way
    ``SparkSubmitHook`` owns spark-submit's process; an operator only asks its hook (``on_kill`` →
    ``kill()``)."""
    supervising = []
    for path in sorted((ROOT / "operators").glob("*.py")):
        text = path.read_text()
        names = _imports(ast.parse(text)) | {
            alias.name for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Import)
            for alias in node.names
        }  # fmt: skip
        if "signal" in names or "os.kill" in text or "os.killpg" in text or '"/proc' in text:
            supervising.append(path.name)
    assert supervising == []
