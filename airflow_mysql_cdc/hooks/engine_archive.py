"""The engine shipped to a cluster's executors: a zip of exactly the installed package, built once.

Invariant: the archive holds the source files of the ``airflow_mysql_cdc`` package this process
imports, byte for byte, and its name carries the package version and a hash of those bytes. Code
that changed (an upgrade, an edited install) gets a new name, so an executor never runs an older
engine than the driver, and the driver, which imports the same files from the same install, runs
what the executors run. An archive is written to a temporary name and renamed into place, so a
concurrent build or a killed one never leaves a partial archive under the final name. Guarded by
``tests/unit/airflow/hooks/test_engine_archive.py``.

Only ``.py`` files go in (no bytecode: executors may run another Python minor version). On a
``local[...]`` master the executors are this machine's Python workers, which import the installed
package already; nothing is shipped there.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path

import airflow_mysql_cdc

CACHE_VARIABLE = "AIRFLOW_MYSQL_CDC_CACHE_DIR"
"""Where archives are kept (default: ``~/.cache/airflow-mysql-cdc``)."""
_FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # the same bytes give the same archive, whenever it is built


def package_sources(root: Path | None = None) -> list[Path]:
    """The package's source files, in a stable order."""
    root = root or Path(airflow_mysql_cdc.__file__).parent
    return sorted(path for path in root.rglob("*.py") if "__pycache__" not in path.parts)


def engine_archive(cache_dir: Path | None = None, root: Path | None = None) -> Path:
    """The archive of the installed package (built now if this version and content have none)."""
    root = root or Path(airflow_mysql_cdc.__file__).parent
    sources = package_sources(root)
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    cache = cache_dir or Path(os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "airflow-mysql-cdc")
    target = cache / f"airflow_mysql_cdc-{airflow_mysql_cdc.__version__}-{digest.hexdigest()[:16]}.zip"
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".building-", suffix=".zip", dir=cache)
    try:
        with os.fdopen(handle, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sources:
                name = (Path(root.name) / path.relative_to(root)).as_posix()
                archive.writestr(zipfile.ZipInfo(name, _FIXED_TIME), path.read_bytes(), zipfile.ZIP_DEFLATED)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def ships_engine(master: str) -> bool:
    """Whether executors on ``master`` need the archive: every master but ``local[...]``."""
    return not master.startswith("local")
