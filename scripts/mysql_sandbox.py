#!/usr/bin/env python3
"""A real MySQL 9.7 server for tests and the demo, without installing anything system-wide.

Debian bookworm has no MySQL server, but Debian unstable ships ``mysql-server-core`` 9.7. Its
binaries need a newer libc and libstdc++ than bookworm's, so we never install them: a private apt
configuration (its own sources list naming the unstable suite, its own lists, cache and an empty
dpkg status) downloads the server, the client and the whole dependency closure, ``dpkg -x`` unpacks
them into a git-ignored cache folder, and ``mysqld`` runs through the *unpacked* dynamic loader with
the unpacked library directories. Nothing outside the cache folder changes.

Every server is identified by its data directory, which holds a ``sandbox.json`` with the port it
listens on, so ``stop``/``status``/``sql`` need only ``--datadir``. ``start`` is idempotent: the
packages are unpacked once (guarded by a lock so parallel starts do not race), a data directory is
initialised once, and a running server is left as it is.

Only the standard library is used: the README commands run this before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = Path(os.environ.get("AIRFLOW_MYSQL_CDC_CACHE", REPO_ROOT / ".cache"))
SANDBOX_DIR = CACHE_DIR / "mysql-sandbox"
DEFAULT_PORT = 13306
DEFAULT_DATADIR = SANDBOX_DIR / "data" / "default"
DEBIAN_MIRROR = os.environ.get("AIRFLOW_MYSQL_CDC_DEBIAN_MIRROR", "http://deb.debian.org/debian")
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
SERVER_PACKAGES = ("mysql-server-core", "mysql-client-core")
# mysqld declares perl:any for helper scripts we never run; skipping it saves ~60% of the download.
SKIPPED_PACKAGE_PREFIXES = ("perl", "libperl", "libgdbm", "libdb5")
READY_TIMEOUT_S = 60.0

# Native AIO reserves kernel AIO contexts (fs.aio-max-nr is machine-wide): a test run that starts a
# dozen servers next to others ran out of them ("io_setup() failed with EAGAIN") and mysqld aborted.
SANDBOX_SERVER_FLAGS = ("--innodb-use-native-aio=OFF",)

# The settings every CDC reader needs; tests that want a misconfigured server override them with
# later --flags (mysqld takes the last value of a repeated option).
CDC_SERVER_FLAGS = (
    "--log-bin=binlog",
    "--gtid-mode=ON",
    "--enforce-gtid-consistency=ON",
    "--binlog-format=ROW",
    "--binlog-row-image=FULL",
    "--binlog-row-metadata=FULL",
)


class SandboxError(RuntimeError):
    """The sandbox could not be provisioned, started or reached; the message says which step failed."""


@dataclass(frozen=True)
class Installation:
    """Where the unpacked Debian packages live and how to run their binaries."""

    root: Path

    @property
    def loader(self) -> Path:
        return self.root / "usr/lib64/ld-linux-x86-64.so.2"

    @property
    def library_path(self) -> str:
        return f"{self.root}/usr/lib/x86_64-linux-gnu:{self.root}/lib/x86_64-linux-gnu"

    def command(self, binary: str, *args: str) -> list[str]:
        """argv that runs an unpacked binary with the unpacked libc instead of the host's."""
        return [str(self.loader), "--library-path", self.library_path, str(self.root / binary), *args]

    @property
    def is_complete(self) -> bool:
        return (self.root / ".complete").exists()


@dataclass(frozen=True)
class Server:
    """One sandbox server, identified by its data directory."""

    datadir: Path
    port: int

    @property
    def socket_path(self) -> Path:
        return self.datadir / "mysqld.sock"

    @property
    def pid_file(self) -> Path:
        return self.datadir / "mysqld.pid"

    @property
    def error_log(self) -> Path:
        return self.datadir / "mysqld.err"

    @property
    def dsn(self) -> str:
        return f"mysql://root@127.0.0.1:{self.port}/"

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        return pid


def _apt_options(apt_dir: Path) -> list[str]:
    return [
        "-o", f"Dir::Etc::SourceList={apt_dir / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=/nonexistent",
        "-o", f"Dir::State::Lists={apt_dir / 'lists'}",
        "-o", f"Dir::Cache={apt_dir / 'cache'}",
        "-o", f"Dir::State::status={apt_dir / 'status'}",
        "-o", "APT::Architecture=amd64",
        "-o", "Debug::NoLocking=1",
        "-o", "Acquire::Retries=3",
    ]  # fmt: skip


def _prepare_private_apt(apt_dir: Path, suite: str = "sid") -> None:
    for sub in ("lists/partial", "cache/archives/partial"):
        (apt_dir / sub).mkdir(parents=True, exist_ok=True)
    if not DEBIAN_KEYRING.exists():
        raise SandboxError(
            f"{DEBIAN_KEYRING} is missing, so Debian {suite}'s package index cannot be verified. "
            "Install it with: apt-get install debian-archive-keyring"
        )
    (apt_dir / "sources.list").write_text(f"deb [signed-by={DEBIAN_KEYRING}] {DEBIAN_MIRROR} {suite} main\n")
    # An empty dpkg status makes apt resolve the full closure, libc6 included, instead of
    # assuming the host's (too old) libraries satisfy the dependencies.
    (apt_dir / "status").write_text("")


def _run(argv: Sequence[str], *, cwd: Path | None = None) -> str:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SandboxError(f"{' '.join(argv[:3])} ... failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result.stdout


def _dependency_closure(apt_options: list[str]) -> list[str]:
    """Every real package the server and client need, resolved now because unstable's names drift."""
    output = _run(
        [
            "apt-cache", *apt_options, "depends", "--recurse", "--no-recommends", "--no-suggests",
            "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", *SERVER_PACKAGES,
        ]
    )  # fmt: skip
    names = {line.strip() for line in output.splitlines() if line and not line.startswith(" ")}
    return sorted(
        name for name in names if not name.startswith("<") and not name.startswith(SKIPPED_PACKAGE_PREFIXES)
    )


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def install(sandbox_dir: Path = SANDBOX_DIR, *, log=print) -> Installation:
    """Download and unpack the server once; later calls return the cached installation."""
    installation = Installation(sandbox_dir / "root")
    if installation.is_complete:
        return installation
    with _lock(sandbox_dir / "install.lock"):
        if installation.is_complete:
            return installation
        apt_dir = sandbox_dir / "apt"
        debs_dir = sandbox_dir / "debs"
        _prepare_private_apt(apt_dir)
        options = _apt_options(apt_dir)
        log("mysql-sandbox: reading Debian unstable's package index (private apt configuration)")
        _run(["apt-get", *options, "update"])
        packages = _dependency_closure(options)
        log(f"mysql-sandbox: downloading {len(packages)} packages")
        debs_dir.mkdir(parents=True, exist_ok=True)
        _run(["apt-get", *options, "download", *packages], cwd=debs_dir)
        if installation.root.exists():
            shutil.rmtree(installation.root)
        installation.root.mkdir(parents=True)
        for deb in sorted(debs_dir.glob("*.deb")):
            _run(["dpkg-deb", "-x", str(deb), str(installation.root)])
        if not installation.loader.exists():
            raise SandboxError(f"unpacked packages have no dynamic loader at {installation.loader}")
        version = _run(installation.command("usr/sbin/mysqld", "--version")).strip()
        (installation.root / ".complete").write_text(version + "\n")
        log(f"mysql-sandbox: installed {version}")
    return installation


def _read_server(datadir: Path) -> Server:
    try:
        config = json.loads((datadir / "sandbox.json").read_text())
    except FileNotFoundError:
        raise SandboxError(f"{datadir} is not a sandbox data directory (no sandbox.json)") from None
    return Server(datadir=datadir, port=int(config["port"]))


def _port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback port nothing listens on now, for a test's extra server."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _client(installation: Installation, server: Server, *args: str) -> list[str]:
    return installation.command(
        "usr/bin/mysql", "--no-defaults", "--user=root", f"--socket={server.socket_path}", *args
    )


def _wait_until_ready(installation: Installation, server: Server, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SandboxError(
                f"mysqld exited with {process.returncode} during start; last lines of "
                f"{server.error_log}:\n{_tail(server.error_log)}"
            )
        probe = subprocess.run(
            _client(installation, server, "--batch", "-e", "SELECT 1"), capture_output=True, text=True
        )
        if probe.returncode == 0:
            return
        time.sleep(0.2)
    raise SandboxError(
        f"mysqld did not accept connections within {READY_TIMEOUT_S:.0f}s:\n{_tail(server.error_log)}"
    )


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def _initialise_template(installation: Installation, template: Path) -> None:
    """One pristine ``--initialize-insecure`` data directory, copied for every new server."""
    if (template / "mysql").is_dir():
        return
    staging = template.with_name(template.name + ".initialising")
    if staging.exists():
        shutil.rmtree(staging)
    _run(
        installation.command(
            "usr/sbin/mysqld", "--no-defaults", "--initialize-insecure", f"--datadir={staging}",
            f"--basedir={installation.root / 'usr'}",
            f"--lc-messages-dir={installation.root / 'usr/share/mysql'}", "--user=root",
        )
    )  # fmt: skip
    # Renamed only when complete, so an interrupted initialisation is redone instead of half-used.
    staging.rename(template)


def _initialise(installation: Installation, datadir: Path, sandbox_dir: Path = SANDBOX_DIR) -> None:
    """Copying a template takes 0.2 s where initialising takes 3 s; tests start many servers."""
    template = sandbox_dir / "data-template"
    with _lock(sandbox_dir / "template.lock"):
        _initialise_template(installation, template)
    datadir.parent.mkdir(parents=True, exist_ok=True)
    staging = datadir.with_name(datadir.name + ".initialising")
    if staging.exists():
        shutil.rmtree(staging)
    shutil.copytree(template, staging, symlinks=True)
    # auto.cnf holds server_uuid: without this every copy would share one UUID, and replication
    # between sandbox servers (and every GTID set) would confuse them.
    (staging / "auto.cnf").unlink(missing_ok=True)
    staging.rename(datadir)


def start(
    *,
    port: int = DEFAULT_PORT,
    datadir: Path = DEFAULT_DATADIR,
    server_id: int = 1,
    extra_flags: Sequence[str] = (),
    log=print,
) -> Server:
    """Start (or reuse) the server for ``datadir``; ``extra_flags`` come last and win."""
    installation = install(log=log)
    datadir = datadir.resolve()
    if (datadir / "sandbox.json").exists():
        running = _read_server(datadir)
        if running.pid() is not None:
            log(f"mysql-sandbox: already running on port {running.port} ({datadir})")
            return running
    if not (datadir / "mysql").is_dir():
        log(f"mysql-sandbox: initialising {datadir}")
        _initialise(installation, datadir)
    if not _port_is_free(port):
        raise SandboxError(f"port {port} on 127.0.0.1 is in use; choose another with --port")
    server = Server(datadir=datadir, port=port)
    (datadir / "sandbox.json").write_text(json.dumps({"port": port, "extra_flags": list(extra_flags)}))
    argv = installation.command(
        "usr/sbin/mysqld", "--no-defaults", f"--datadir={datadir}", f"--basedir={installation.root / 'usr'}",
        f"--lc-messages-dir={installation.root / 'usr/share/mysql'}", "--user=root", f"--port={port}",
        "--bind-address=127.0.0.1", f"--socket={server.socket_path}", f"--pid-file={server.pid_file}",
        f"--log-error={server.error_log}", "--mysqlx=OFF", f"--server-id={server_id}",
        "--secure-file-priv=", "--skip-name-resolve=OFF", *SANDBOX_SERVER_FLAGS, *CDC_SERVER_FLAGS,
        *extra_flags,
    )  # fmt: skip
    with open(os.devnull, "rb") as stdin, open(datadir / "mysqld.out", "ab") as out:
        process = subprocess.Popen(
            argv, stdin=stdin, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    _wait_until_ready(installation, server, process)
    # root@localhost matches only the socket when 127.0.0.1 is not resolved; add the TCP account
    # clients (PyMySQL, the binlog reader) use. Idempotent on later starts.
    _run(
        _client(
            installation, server, "-e",
            "SET sql_log_bin=0; CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';"
            " GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;",
        )
    )  # fmt: skip
    log(f"mysql-sandbox: running on 127.0.0.1:{port} ({datadir})")
    return server


def stop(*, datadir: Path = DEFAULT_DATADIR, timeout_s: float = 30.0, log=print) -> None:
    """Stop the server for ``datadir``: a clean shutdown first, SIGKILL if it hangs."""
    datadir = datadir.resolve()
    if not (datadir / "sandbox.json").exists():
        log(f"mysql-sandbox: nothing to stop in {datadir}")
        return
    server = _read_server(datadir)
    pid = server.pid()
    if pid is None:
        log(f"mysql-sandbox: not running ({datadir})")
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and server.pid() is not None:
        time.sleep(0.1)
    if server.pid() is not None:
        os.kill(pid, signal.SIGKILL)
    log(f"mysql-sandbox: stopped ({datadir})")


def sql(statement: str | None, *, datadir: Path = DEFAULT_DATADIR, client_args: Sequence[str] = ()) -> int:
    """Run the mysql client against the server; with no statement it reads SQL from stdin."""
    server = _read_server(datadir.resolve())
    if server.pid() is None:
        raise SandboxError(f"the server in {datadir} is not running; run: scripts/mysql-sandbox start")
    argv = _client(install(log=lambda _: None), server, *client_args)
    if statement is not None:
        argv += ["-e", statement]
    return subprocess.run(argv).returncode


def status(*, datadir: Path = DEFAULT_DATADIR) -> int:
    datadir = datadir.resolve()
    if not (datadir / "sandbox.json").exists():
        print(f"not initialised ({datadir})")
        return 1
    server = _read_server(datadir)
    if server.pid() is None:
        print(f"stopped ({datadir})")
        return 1
    print(f"running pid={server.pid()} port={server.port} dsn={server.dsn} datadir={datadir}")
    return sql(
        "SELECT @@version, @@server_uuid, @@gtid_mode, @@binlog_format, @@binlog_row_metadata,"
        " @@gtid_executed, @@gtid_purged",
        datadir=datadir,
        client_args=["--vertical"],
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mysql-sandbox", description=__doc__.split("\n")[0])
    parser.add_argument("--datadir", type=Path, default=DEFAULT_DATADIR, help="server data directory")
    commands = parser.add_subparsers(dest="command", required=True)
    start_parser = commands.add_parser("start", help="install if needed, initialise if needed, start")
    start_parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    start_parser.add_argument("--server-id", type=int, default=1)
    start_parser.add_argument(
        "extra_flags", nargs="*", help="extra mysqld flags after --, e.g. -- --binlog-format=MIXED"
    )
    commands.add_parser("stop", help="stop the server")
    commands.add_parser("status", help="show whether it runs and its GTID state")
    commands.add_parser("install", help="only download and unpack the packages")
    sql_parser = commands.add_parser("sql", help="run a statement, or SQL from stdin")
    sql_parser.add_argument("statement", nargs="?")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            start(
                port=args.port, datadir=args.datadir, server_id=args.server_id, extra_flags=args.extra_flags
            )
        elif args.command == "stop":
            stop(datadir=args.datadir)
        elif args.command == "status":
            return status(datadir=args.datadir)
        elif args.command == "install":
            install()
        elif args.command == "sql":
            return sql(args.statement, datadir=args.datadir)
    except SandboxError as error:
        print(f"mysql-sandbox: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
