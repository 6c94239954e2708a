"""The engine shipped to executors is exactly the installed package, built once per content."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import airflow_mysql_cdc
from airflow_mysql_cdc.hooks.engine_archive import engine_archive, package_sources, ships_engine


def test_the_archive_holds_every_source_file_byte_for_byte_and_no_bytecode(tmp_path: Path) -> None:
    archive = engine_archive(tmp_path)
    root = Path(airflow_mysql_cdc.__file__).parent
    with zipfile.ZipFile(archive) as shipped:
        names = shipped.namelist()
        assert names == [f"airflow_mysql_cdc/{p.relative_to(root).as_posix()}" for p in package_sources()]
        assert (
            shipped.read("airflow_mysql_cdc/engine/values/gtid.py")
            == (root / "engine/values/gtid.py").read_bytes()
        )
    assert not any(name.endswith(".pyc") for name in names)
    assert archive.name.startswith(f"airflow_mysql_cdc-{airflow_mysql_cdc.__version__}-")


def test_the_same_content_reuses_the_archive_and_changed_content_gets_a_new_name(tmp_path: Path) -> None:
    package = tmp_path / "src" / "airflow_mysql_cdc"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("__version__ = 'x'\n")
    (package / "engine.py").write_text("ANSWER = 1\n")
    first = engine_archive(tmp_path / "cache", root=package)
    built_at = first.stat().st_mtime_ns
    assert engine_archive(tmp_path / "cache", root=package) == first and first.stat().st_mtime_ns == built_at
    (package / "engine.py").write_text("ANSWER = 2\n")  # an edited install, same version
    second = engine_archive(tmp_path / "cache", root=package)
    assert second != first
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted([first.name, second.name])


def test_an_executor_without_the_package_imports_the_engine_from_the_archive(tmp_path: Path) -> None:
    archive = engine_archive(tmp_path)
    program = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "import airflow_mysql_cdc.engine.values.gtid as gtid; print(gtid.__file__)"
    )
    # -S: no site-packages, so the installed package is out of reach, as on a bare executor.
    output = subprocess.run(
        [sys.executable, "-S", "-c", program, str(archive)], capture_output=True, text=True, check=True
    )
    assert output.stdout.strip().startswith(str(archive))


def test_only_local_masters_need_nothing_shipped() -> None:
    assert not ships_engine("local[2]") and not ships_engine("local")
    assert (
        ships_engine("spark://127.0.0.1:7077")
        and ships_engine("yarn")
        and ships_engine("k8s://https://h:6443")
    )
