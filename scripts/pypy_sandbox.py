#!/usr/bin/env python3
"""Debian's PyPy and the pure-Python binlog libraries in ``.cache/pypy``, for ``scripts/bench_pypy.py``.

PyPy is not on PyPI, but Debian packages it. Like ``scripts/mysql_sandbox.py``, a private apt
configuration (its own sources list, lists, cache and empty dpkg status) downloads the packages and
``dpkg-deb -x`` unpacks them into a git-ignored folder; nothing outside it changes. We take
*bookworm's* ``pypy3`` (7.3.11, Python 3.9), not unstable's: the host is bookworm, so the unpacked
binary runs directly against the host's libc, libffi, libssl and friends (all of its other
dependencies are bookworm packages the host already has), with no unpacked loader; only
``libpypy3.9-c.so`` is found through ``LD_LIBRARY_PATH`` (see ``environment``).

Debian strips ``ensurepip``'s wheels out of ``pypy3``; we unpack ``python3-pip-whl`` and run pip
straight from its wheel (``pypy3 pip-*.whl/pip install --target``), which puts PyMySQL and
mysql-replication into ``.cache/pypy/site`` for ``PYTHONPATH``.

    python3 scripts/pypy_sandbox.py            # prints the pypy3 path and the site folder
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pypy3", "pypy3-lib", "python3-pip-whl")
LIBRARIES = ("PyMySQL", "mysql-replication==1.0.17")


def _load_sandbox():
    spec = importlib.util.spec_from_file_location("mysql_sandbox", REPO_ROOT / "scripts" / "mysql_sandbox.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mysql_sandbox"] = module
    spec.loader.exec_module(module)
    return module


sandbox = _load_sandbox()
PYPY_DIR = sandbox.CACHE_DIR / "pypy"
ROOT = PYPY_DIR / "root"
SITE = PYPY_DIR / "site"
PYPY = ROOT / "usr/bin/pypy3"


def environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment pypy3 runs in: its unpacked libpypy and the installed libraries on the paths."""
    base = dict(os.environ if base is None else base)
    library_path = str(ROOT / "usr/lib/x86_64-linux-gnu")
    if base.get("LD_LIBRARY_PATH"):
        library_path += os.pathsep + base["LD_LIBRARY_PATH"]
    return {**base, "LD_LIBRARY_PATH": library_path, "PYTHONPATH": str(SITE)}


def install(*, log=print) -> tuple[Path, Path]:
    """Download, unpack and populate once; returns (pypy3 binary, site folder for PYTHONPATH)."""
    if (PYPY_DIR / ".complete").exists():
        return PYPY, SITE
    with sandbox._lock(PYPY_DIR / "install.lock"):
        if (PYPY_DIR / ".complete").exists():
            return PYPY, SITE
        apt_dir, debs_dir = PYPY_DIR / "apt", PYPY_DIR / "debs"
        sandbox._prepare_private_apt(apt_dir, suite="bookworm")
        options = sandbox._apt_options(apt_dir)
        log("pypy-sandbox: reading Debian bookworm's package index (private apt configuration)")
        sandbox._run(["apt-get", *options, "update"])
        debs_dir.mkdir(parents=True, exist_ok=True)
        sandbox._run(["apt-get", *options, "download", *PACKAGES], cwd=debs_dir)
        shutil.rmtree(ROOT, ignore_errors=True)
        ROOT.mkdir(parents=True)
        for deb in sorted(debs_dir.glob("*.deb")):
            sandbox._run(["dpkg-deb", "-x", str(deb), str(ROOT)])
        pip_wheel = next((ROOT / "usr/share/python-wheels").glob("pip-*.whl"))
        shutil.rmtree(SITE, ignore_errors=True)
        log(f"pypy-sandbox: installing {', '.join(LIBRARIES)} with pypy3")
        pip = [str(PYPY), f"{pip_wheel}/pip", "install", "--quiet", "--target", str(SITE), *LIBRARIES]
        subprocess.run(pip, env=environment(), check=True)
        version = (
            subprocess.run(
                [str(PYPY), "--version"], env=environment(), capture_output=True, text=True, check=True
            )
            .stdout.strip()
            .replace("\n", " ")
        )
        (PYPY_DIR / ".complete").write_text(version + "\n")
        log(f"pypy-sandbox: installed {version}")
    return PYPY, SITE


if __name__ == "__main__":
    pypy, site = install()
    print(f"{pypy}\n{site}")
