"""Real MySQL servers for the tests: the shared sandbox, extra servers, per-test databases.

Set ``AIRFLOW_MYSQL_CDC_TEST_DSN=mysql://user:password@host:port/`` to run against an existing
MySQL 8.0/8.4/9.x server instead of provisioning the sandbox. The user needs to create and drop
databases. Tests that start extra servers (bad settings, replicas) always use the sandbox
binaries, which they provision on first use.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint

REPO_ROOT = Path(__file__).resolve().parents[2]
TEST_DSN_VARIABLE = "AIRFLOW_MYSQL_CDC_TEST_DSN"


def load_sandbox_module() -> ModuleType:
    """scripts/mysql_sandbox.py is a stdlib-only script, not part of the package; load it by path."""
    name = "mysql_sandbox"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / "mysql_sandbox.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class SandboxServer:
    """A server a test started; ``endpoint`` logs in as root over TCP."""

    datadir: Path
    port: int
    endpoint: MySqlEndpoint

    def stop(self) -> None:
        load_sandbox_module().stop(datadir=self.datadir, log=lambda _: None)

    def kill(self) -> None:
        """SIGKILL: for the end of the run, when nothing will read the data folder again (a clean
        shutdown of a server that served the whole suite flushed for many seconds)."""
        load_sandbox_module().stop(datadir=self.datadir, timeout_s=0, log=lambda _: None)


@dataclass
class ServerPool:
    """Starts extra sandbox servers on free ports and stops every one of them at teardown."""

    base_dir: Path
    started: list[SandboxServer] = field(default_factory=list)

    def start(
        self, extra_flags: Sequence[str] = (), *, server_id: int | None = None, name: str = ""
    ) -> SandboxServer:
        sandbox = load_sandbox_module()
        port = sandbox.free_port()
        label = name or f"server{len(self.started) + 1}"
        datadir = self.base_dir / label
        sandbox.start(
            port=port,
            datadir=datadir,
            server_id=server_id or 100 + len(self.started),
            extra_flags=list(extra_flags),
            log=lambda _: None,
        )
        server = SandboxServer(datadir=datadir, port=port, endpoint=MySqlEndpoint("127.0.0.1", port, "root"))
        self.started.append(server)
        return server

    def stop_all(self) -> None:
        """Kill every server started (their data folders are thrown away with the run)."""
        for server in reversed(self.started):
            server.kill()


def shared_server_endpoint(base_dir: Path, pool: ServerPool) -> Iterator[MySqlEndpoint]:
    """The one server of the test run: the user's (from the DSN variable) or a fresh sandbox."""
    dsn = os.environ.get(TEST_DSN_VARIABLE)
    if dsn:
        yield MySqlEndpoint.from_url(dsn).with_database(None)
        return
    server = pool.start(server_id=1, name="shared")
    yield server.endpoint


def database_name_for(test_name: str) -> str:
    """A unique, valid, recognisable database name per test (MySQL limits names to 64 chars)."""
    cleaned = re.sub(r"[^a-z0-9_]", "_", test_name.lower())[:40]
    return f"t_{cleaned}_{uuid.uuid4().hex[:8]}"


def execute(endpoint: MySqlEndpoint, *statements: str) -> list[tuple]:
    """Run statements in one autocommit session; returns the rows of the last one."""
    rows: list[tuple] = []
    with endpoint.connect() as connection, connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
            rows = list(cursor.fetchall())
    return rows


def scalar(endpoint: MySqlEndpoint, query: str):
    return execute(endpoint, query)[0][0]


def purge_all_binlogs(endpoint: MySqlEndpoint) -> None:
    """Rotate the binlog and purge every older file: ``gtid_purged`` becomes all executed so far."""
    execute(endpoint, "FLUSH BINARY LOGS")
    current = execute(endpoint, "SHOW BINARY LOG STATUS")[0][0]
    execute(endpoint, f"PURGE BINARY LOGS TO '{current}'")


def create_user(endpoint: MySqlEndpoint, name: str, password: str, *grants: str) -> MySqlEndpoint:
    """A user that logs in over TCP from 127.0.0.1 with the given grants (``ON ... `` clauses)."""
    account = f"'{name}'@'127.0.0.1'"
    execute(endpoint, f"DROP USER IF EXISTS {account}", f"CREATE USER {account} IDENTIFIED BY '{password}'")
    for grant in grants:
        execute(endpoint, f"GRANT {grant} TO {account}")
    return MySqlEndpoint(endpoint.host, endpoint.port, name, password)
