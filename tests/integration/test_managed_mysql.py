"""What managed MySQL platforms need from a pipeline, on real MySQL 9.7 servers: a ``caching_sha2_password``
account logging in with and without TLS (RSA key exchange) from every place a pipeline connects, login
failures that say what to do, and Aurora's ``gtid_mode=ON_PERMISSIVE`` refused with the reason.

Every login here runs the *full* ``caching_sha2_password`` exchange: the server's cache of the
account is emptied first (``FLUSH PRIVILEGES``), as after a restart, which is when a managed
server's clients meet it (docs/platforms/README.md, "Connecting").
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pymysql
import pytest

from airflow_mysql_cdc.engine.binlog.errors import UnsupportedServerSettingError
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import UntilCaughtUp
from airflow_mysql_cdc.engine.entrypoints.snapshot_to_delta import run_windows_on_spark
from airflow_mysql_cdc.engine.mysql.prerequisites.checks import (
    PrerequisiteConfig,
    PrerequisiteReport,
    check_prerequisites,
)
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.runtime.executor_secrets import ExecutorSecrets
from airflow_mysql_cdc.engine.runtime.spark_tasks import SparkTasks
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.snapshot.window import open_window_connection
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.tls import MySqlLoginError
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from tests.support.airflow import connection_env, run_dag, task_states, xcom_value
from tests.support.lake import assert_lake_equals_source
from tests.support.mysql import SandboxServer, ServerPool, execute, scalar
from tests.support.pipeline import seed

pytestmark = pytest.mark.mysql
PASSWORD = "Sha2-Full-Auth-7Qx"
ACCOUNT = "cdc_sha2"


@pytest.fixture(scope="module")
def tls_only_server(mysql_servers: ServerPool) -> SandboxServer:
    """A server that refuses plain connections: whatever logs in here used TLS."""
    return mysql_servers.start(["--require-secure-transport=ON"], name="managed_tls_only")


@pytest.fixture(scope="module")
def plain_server(mysql_servers: ServerPool) -> SandboxServer:
    """A server with TLS off (``tls_version`` empty): whatever logs in here did not use TLS."""
    return mysql_servers.start(["--tls-version="], name="managed_without_tls")


def _sha2_account(server: SandboxServer, database: str) -> MySqlEndpoint:
    """A caching_sha2_password account with the pipeline's grants, its database holding ``orders``."""
    account = f"'{ACCOUNT}'@'127.0.0.1'"
    execute(
        server.endpoint,
        f"DROP DATABASE IF EXISTS {database}",
        f"CREATE DATABASE {database}",
        f"DROP USER IF EXISTS {account}",
        f"CREATE USER {account} IDENTIFIED WITH caching_sha2_password BY '{PASSWORD}'",
        f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO {account}",
        f"GRANT SELECT ON {database}.* TO {account}",
    )
    seed(server.endpoint.with_database(database), "orders", 50)
    return MySqlEndpoint(server.endpoint.host, server.port, ACCOUNT, PASSWORD, database)


def _forget_logins(server: SandboxServer) -> None:
    """Empty the server's caching_sha2_password cache: the next login runs the full exchange."""
    execute(server.endpoint, "FLUSH PRIVILEGES")


def _hook_for(monkeypatch: pytest.MonkeyPatch, endpoint: MySqlEndpoint, **extra: Any) -> MySqlCdcHook:
    connection = json.loads(connection_env(endpoint, server_id=7301))
    connection["schema"] = endpoint.database
    connection["extra"].update(extra)
    monkeypatch.setenv("AIRFLOW_CONN_MANAGED_SOURCE", json.dumps(connection))
    return MySqlCdcHook("managed_source")


def _tls_cipher(connection: pymysql.connections.Connection) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        return cursor.fetchone()[1]


def _without_cryptography(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as if the 'cryptography' package were not installed (what PyMySQL checks)."""
    monkeypatch.setattr(pymysql._auth, "_have_cryptography", False)


def _every_place_a_pipeline_connects(server: SandboxServer, hook: MySqlCdcHook) -> list[str]:
    """Log in from the hook, the prerequisites check, a binlog read and a snapshot window, each
    after the server forgot the account; returns each session's TLS cipher ('' without TLS)."""
    endpoint = hook.get_endpoint()
    database = endpoint.database
    ciphers = []
    _forget_logins(server)
    assert hook.test_connection()[0], hook.test_connection()
    _forget_logins(server)
    report = hook.check_prerequisites(
        PrerequisiteConfig(tables=(TableRef(database, "orders"),), reader_server_ids=(7301,))
    )
    assert {r.name for r in report.errors} == set(), report.render_table()
    start = GtidSet.parse(scalar(server.endpoint, "SELECT @@GLOBAL.gtid_executed"))
    execute(server.endpoint, f"UPDATE {database}.orders SET status = 'paid' WHERE id = 7")
    _forget_logins(server)
    reader = BinlogReader(endpoint, tables=[f"{database}.orders"], heartbeat_s=0.2)
    # FLUSH PRIVILEGES is logged too: keep the transaction that changed rows.
    (transaction,) = [t for t in reader.read(start, UntilCaughtUp()) if t.changes]
    (change,) = transaction.changes
    assert change.after["status"] == "paid"
    _forget_logins(server)
    with open_window_connection(endpoint) as window_connection:
        ciphers.append(_tls_cipher(window_connection))
    with hook.get_conn() as hook_connection:
        ciphers.append(_tls_cipher(hook_connection))
    return ciphers


# --- caching_sha2_password over TLS ------------------------------------------------------------


def test_caching_sha2_password_over_tls_with_the_servers_ca_logs_in_everywhere_without_rsa(
    tls_only_server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over TLS the password travels inside it: no RSA, so no 'cryptography' needed."""
    endpoint = _sha2_account(tls_only_server, "managed_tls_everywhere")
    hook = _hook_for(monkeypatch, endpoint, ssl_ca=str(tls_only_server.datadir / "ca.pem"))
    assert hook.get_endpoint().tls.effective_mode == "VERIFY_CA"
    _without_cryptography(monkeypatch)
    ciphers = _every_place_a_pipeline_connects(tls_only_server, hook)
    assert all(ciphers), ciphers


def test_a_plain_connection_to_a_server_that_requires_tls_is_told_to_drop_ssl_mode_disabled(
    tls_only_server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = _sha2_account(tls_only_server, "managed_tls_refused")
    hook = _hook_for(monkeypatch, endpoint, ssl_mode="DISABLED")
    with pytest.raises(MySqlLoginError) as raised:
        hook.get_conn()
    message = str(raised.value)
    assert f"{ACCOUNT}@127.0.0.1:{tls_only_server.port}: the server accepts only TLS connections" in message
    assert "require_secure_transport=ON" in message and "Remove ssl_mode DISABLED" in message
    ok, shown = hook.test_connection()  # what the connection form's Test button shows
    assert not ok and "accepts only TLS connections" in shown


def test_verify_identity_against_an_auto_generated_certificate_says_it_names_no_host(
    tls_only_server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = _sha2_account(tls_only_server, "managed_tls_identity")
    hook = _hook_for(
        monkeypatch, endpoint, ssl_ca=str(tls_only_server.datadir / "ca.pem"), ssl_mode="VERIFY_IDENTITY"
    )
    with pytest.raises(MySqlLoginError) as raised:
        hook.get_conn()
    message = str(raised.value)
    assert "TLS verification of the server's certificate failed" in message
    assert "127.0.0.1" in message and "use VERIFY_CA with them" in message


def test_a_ca_that_did_not_sign_the_servers_certificate_is_named(
    tls_only_server: SandboxServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    endpoint = _sha2_account(tls_only_server, "managed_tls_wrong_ca")
    stranger = tmp_path / "other-ca.pem"
    stranger.write_text(_self_signed_ca_pem())
    hook = _hook_for(monkeypatch, endpoint, ssl_ca=str(stranger))
    with pytest.raises(MySqlLoginError, match="ssl_ca must be the CA that signed the server's certificate"):
        hook.get_conn()


def _self_signed_ca_pem() -> str:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Not the server's CA")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


def test_snapshot_windows_on_spark_executors_log_in_over_tls_with_the_connections_files(
    tls_only_server: SandboxServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spark_local_2: Any
) -> None:
    """Executors get the endpoint's TLS settings (the CA path) with their tasks; the server refuses
    anything else, so a lake equal to the source proves every window logged in over TLS."""
    endpoint = _sha2_account(tls_only_server, "managed_tls_spark")
    source = _hook_for(monkeypatch, endpoint, ssl_ca=str(tls_only_server.datadir / "ca.pem")).get_endpoint()
    _forget_logins(tls_only_server)
    secrets = ExecutorSecrets(spark_local_2.sparkContext)
    try:
        result = snapshot_table(
            source, tmp_path, f"{endpoint.database}.orders", chunk_size=10,
            run_windows=partial(run_windows_on_spark, SparkTasks(spark_local_2.sparkContext), secrets),
        )  # fmt: skip
    finally:
        secrets.withdraw()
    assert result.chunks_total >= 5
    assert_lake_equals_source(tls_only_server.endpoint, tmp_path, endpoint.database, "orders")


# --- caching_sha2_password without TLS: RSA key exchange -----------------------------------------


def test_caching_sha2_password_without_tls_logs_in_everywhere_by_rsa_key_exchange(
    plain_server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No TLS options (PREFERRED) on a server without TLS: every connection falls back to a plain one."""
    endpoint = _sha2_account(plain_server, "managed_plain_everywhere")
    hook = _hook_for(monkeypatch, endpoint)
    assert hook.get_endpoint().tls.effective_mode == "PREFERRED"
    ciphers = _every_place_a_pipeline_connects(plain_server, hook)
    assert ciphers == ["", ""]


def test_ssl_mode_disabled_logs_in_by_rsa_with_the_pinned_server_public_key(
    plain_server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``server_public_key_path`` the key is not asked from the server (nobody can swap it)."""
    endpoint = _sha2_account(plain_server, "managed_plain_pinned")
    hook = _hook_for(
        monkeypatch,
        endpoint,
        ssl_mode="DISABLED",
        server_public_key_path=str(plain_server.datadir / "public_key.pem"),
    )
    pinned = hook.get_endpoint()
    assert pinned.server_public_key and pinned.server_public_key.startswith("-----BEGIN PUBLIC KEY-----")
    _forget_logins(plain_server)
    with hook.get_conn() as connection:
        assert _tls_cipher(connection) == ""


def test_without_cryptography_the_rsa_login_says_to_install_it_or_use_tls(
    plain_server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = _sha2_account(plain_server, "managed_plain_no_crypto")
    hook = _hook_for(monkeypatch, endpoint)
    _without_cryptography(monkeypatch)
    _forget_logins(plain_server)
    with pytest.raises(MySqlLoginError) as raised:
        hook.get_conn()
    message = str(raised.value)
    assert (
        f"MySQL asked for {ACCOUNT}@127.0.0.1:{plain_server.port}'s password by RSA key exchange" in message
    )
    assert "pip install 'PyMySQL[rsa]'" in message and "on Spark executors too" in message
    assert "connect over TLS" in message
    assert PASSWORD not in message
    # The binlog reader meets the same message (its connections open through the same factory).
    _forget_logins(plain_server)
    with pytest.raises(MySqlLoginError, match="lacks the 'cryptography' package"):
        list(BinlogReader(hook.get_endpoint(), heartbeat_s=0.2).read(GtidSet(), UntilCaughtUp()))


def test_tls_required_by_the_connection_on_a_server_without_tls_says_what_to_change(
    plain_server: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = _sha2_account(plain_server, "managed_plain_required")
    hook = _hook_for(monkeypatch, endpoint, ssl_mode="REQUIRED")
    with pytest.raises(MySqlLoginError) as raised:
        hook.get_conn()
    message = str(raised.value)
    assert "the server offers no TLS, and the connection's ssl_mode is REQUIRED" in message
    assert "Enable TLS on the server" in message


# --- gtid_mode ON_PERMISSIVE (Aurora) ----------------------------------------------------------


def test_on_permissive_gtid_mode_is_refused_by_the_prerequisites_task_with_why_and_the_way_out(
    mysql_servers: ServerPool,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
    airflow_db: None,
) -> None:
    server = mysql_servers.start(["--gtid-mode=ON_PERMISSIVE"], name="aurora_on_permissive")
    execute(server.endpoint, "CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT PRIMARY KEY)")
    # Why it is refused: a session may still write an anonymous transaction, which no GTID names.
    before = scalar(server.endpoint, "SELECT @@GLOBAL.gtid_executed")
    execute(server.endpoint, "SET gtid_next = 'ANONYMOUS'", "INSERT INTO shop.orders VALUES (1)", "COMMIT")
    assert scalar(server.endpoint, "SELECT @@GLOBAL.gtid_executed") == before
    assert scalar(server.endpoint, "SELECT COUNT(*) FROM shop.orders") == 1

    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", connection_env(server.endpoint, server_id=7302))
    dag_run = run_dag(
        "gtid_checks.py", "test_gtid_checks", {"conn_id": "cdc_source", "tables": "shop.orders"}
    )
    assert task_states(dag_run)["prerequisites"] == "failed"
    report = xcom_value(dag_run, "prerequisites", "prerequisites_report")
    (gtid_mode,) = [r for r in report["results"] if r["status"] == "error"]
    assert (gtid_mode["name"], gtid_mode["actual"], gtid_mode["expected"]) == (
        "gtid_mode",
        "ON_PERMISSIVE",
        "ON",
    )
    log = "".join(capfd.readouterr())
    assert "ERROR gtid_mode: " in log
    assert "anonymous transactions, which have no GTID, so no GTID position can see them" in log
    assert "fix: wait until SHOW GLOBAL STATUS LIKE 'Ongoing_anonymous_transaction_count' is 0" in log
    assert "1 CDC prerequisite(s) failed on mysql://root@127.0.0.1" in log

    # The binlog reader refuses too, with the same reason (it re-checks before every read).
    with pytest.raises(UnsupportedServerSettingError, match="gtid_mode is ON_PERMISSIVE, but change data"):
        list(BinlogReader(server.endpoint, heartbeat_s=0.2).read(GtidSet(), UntilCaughtUp()))


# --- binlog_row_metadata MINIMAL (Azure Flexible Server) -----------------------------------------


def test_a_source_stuck_with_minimal_row_metadata_feeds_the_pipeline_through_a_replica_logging_full(
    mysql_servers: ServerPool,
) -> None:
    """Where the platform does not let you set binlog_row_metadata (Azure Flexible Server), a replica
    you run logs the replicated rows with *its* setting: the pipeline reads that replica."""
    source = mysql_servers.start(["--binlog-row-metadata=MINIMAL"], name="azure_like_source")
    replica = mysql_servers.start(["--log-replica-updates=ON"], name="azure_like_replica")
    execute(source.endpoint, "CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT PRIMARY KEY, v TEXT)")
    refused = {r.name: r for r in _prerequisites(source.endpoint).errors}
    assert set(refused) == {"binlog_row_metadata"}
    assert "no column names" in refused["binlog_row_metadata"].why

    execute(
        replica.endpoint,
        f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={source.port}, "
        "SOURCE_USER='root', SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1",
        "START REPLICA",
    )
    execute(source.endpoint, "INSERT INTO shop.orders VALUES (1, 'on the source')")
    target = scalar(source.endpoint, "SELECT @@GLOBAL.gtid_executed")
    execute(replica.endpoint, f"SELECT WAIT_FOR_EXECUTED_GTID_SET('{target}', 30)")
    assert _prerequisites(replica.endpoint).errors == []
    transactions = BinlogReader(replica.endpoint, tables=["shop.orders"], heartbeat_s=0.2).read(
        GtidSet(), UntilCaughtUp()
    )
    (change,) = [change for transaction in transactions for change in transaction.changes]
    assert dict(change.after) == {"id": 1, "v": "on the source"}


def _prerequisites(endpoint: MySqlEndpoint) -> PrerequisiteReport:
    with endpoint.connect() as connection:
        return check_prerequisites(
            connection,
            PrerequisiteConfig(tables=(TableRef("shop", "orders"),), reader_server_ids=(7303,)),
            server=str(endpoint),
        )
