"""Airflow hook: turns an Airflow connection into the engine's :class:`MySqlEndpoint`.

The endpoint it builds is the one every part of a pipeline connects with: this hook's own queries
(prerequisites, sensors), the Spark driver (binlog reader) and the Spark executors (snapshot
windows, range readers), so everything it reads from the connection must hold there too: TLS file
paths must exist on every one of those machines, and a password must stay valid for the whole run
(which is why IAM tokens are refused, see :data:`IAM_NOT_SUPPORTED`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pymysql
from airflow.sdk import BaseHook

from airflow_mysql_cdc.engine.mysql.prerequisites.checks import (
    PrerequisiteConfig,
    PrerequisiteReport,
    check_prerequisites,
)
from airflow_mysql_cdc.engine.mysql.server_state import ServerState, read_server_state
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.resumability import ResumabilityAssessment, assess_resumability
from airflow_mysql_cdc.engine.values.tls import TlsOptions, parse_tls_mode
from airflow_mysql_cdc.hooks import lineage
from airflow_mysql_cdc.hooks.connection_errors import explained_connection_failures

SUPPORTED_CONNECTION_TYPES = ("mysql_cdc", "mysql")
IAM_NOT_SUPPORTED = (
    "connection {conn_id!r} asks for IAM database authentication (extra 'iam'), which the MySQL CDC "
    "hook does not support: an IAM token (RDS/Aurora generate_db_auth_token, Cloud SQL IAM, Microsoft "
    "Entra ID) logs in only for a short time after it is made (15 minutes on RDS), and a pipeline opens "
    "new connections for the whole run from its Spark driver and executors (binlog reconnects, snapshot "
    "windows), where no token can be refreshed. Give the pipeline a password account instead "
    "(caching_sha2_password over TLS, the password kept in a secrets backend) and remove 'iam' from "
    "the connection's extras; docs/platforms/README.md, 'IAM authentication', says why and how."
)


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


class MySqlCdcHook(BaseHook):
    """Connects to the source MySQL server of a CDC pipeline.

    Accepts ``mysql_cdc`` connections and the standard ``mysql`` ones, so an existing MySQL
    connection can be reused. Extras:

    - ``server_id``: the replication server_id binlog readers use; it must differ from the server's
      and every other replica's.
    - ``ssl_mode``: ``DISABLED``, ``PREFERRED``, ``REQUIRED``, ``VERIFY_CA`` or ``VERIFY_IDENTITY``
      (the MySQL client's ``--ssl-mode``; the mysql provider's extra of the same name). Without it,
      the files choose: ``ssl_ca`` means VERIFY_CA (VERIFY_IDENTITY with ``ssl_verify_identity``),
      a client certificate alone REQUIRED, nothing PREFERRED.
    - ``ssl_ca``, ``ssl_cert``, ``ssl_key``, ``ssl_verify_identity``: paths on every machine that
      connects (Airflow worker, Spark driver and executors). The mysql provider's ``ssl`` extra (a
      dict or JSON string with ``ca``/``cert``/``key``) is understood too.
    - ``server_public_key_path``: the server's RSA public key (PEM file on the Airflow worker; its
      text travels with the endpoint), for ``caching_sha2_password`` without TLS; without it the
      key is asked from the server.

    ``iam`` is refused with the reason (:data:`IAM_NOT_SUPPORTED`).
    """

    conn_name_attr = "mysql_cdc_conn_id"
    default_conn_name = "mysql_cdc_default"
    conn_type = "mysql_cdc"
    hook_name = "MySQL CDC"

    def __init__(self, mysql_cdc_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mysql_cdc_conn_id = mysql_cdc_conn_id

    def get_endpoint(self) -> MySqlEndpoint:
        connection = self.get_connection(self.mysql_cdc_conn_id)
        if connection.conn_type not in SUPPORTED_CONNECTION_TYPES:
            raise ValueError(
                f"connection {self.mysql_cdc_conn_id!r} has type {connection.conn_type!r}; "
                f"use one of {', '.join(SUPPORTED_CONNECTION_TYPES)}"
            )
        extra = connection.extra_dejson
        if _as_bool(extra.get("iam", False)):
            raise ValueError(IAM_NOT_SUPPORTED.format(conn_id=self.mysql_cdc_conn_id))
        legacy_ssl = extra.get("ssl") or {}
        if isinstance(legacy_ssl, str):
            legacy_ssl = json.loads(legacy_ssl)
        server_id = extra.get("server_id")
        public_key_path = extra.get("server_public_key_path")
        return MySqlEndpoint(
            host=connection.host or "127.0.0.1",
            port=int(connection.port or 3306),
            user=connection.login or "root",
            password=connection.password or "",
            database=connection.schema or None,
            tls=TlsOptions(
                ca=extra.get("ssl_ca") or legacy_ssl.get("ca"),
                cert=extra.get("ssl_cert") or legacy_ssl.get("cert"),
                key=extra.get("ssl_key") or legacy_ssl.get("key"),
                verify_identity=_as_bool(extra.get("ssl_verify_identity", False)),
                mode=parse_tls_mode(extra.get("ssl_mode")),
            ),
            replication_server_id=int(server_id) if server_id not in (None, "") else None,
            server_public_key=Path(public_key_path).read_text() if public_key_path else None,
        )

    def get_conn(self) -> pymysql.connections.Connection:
        """An open connection; a failure to open it names this connection id and the fix, and is an
        ``AirflowFailException`` unless a retry can help (:mod:`.connection_errors`)."""
        return self._connect(self.get_endpoint())

    def _connect(self, endpoint: MySqlEndpoint) -> pymysql.connections.Connection:
        with explained_connection_failures(self.mysql_cdc_conn_id, str(endpoint)):
            return endpoint.connect()

    def get_server_state(self) -> ServerState:
        """Version, flavor, server_uuid, GTID sets and binary log status (8.0, 8.4 and 9.x alike)."""
        with self.get_conn() as connection:
            return read_server_state(connection)

    def get_gtid_executed(self) -> GtidSet:
        return GtidSet.parse(self._select_one("SELECT @@GLOBAL.gtid_executed"))

    def get_missing_tables(self, tables: Sequence[str]) -> frozenset[str]:
        """Those of the ``schema.table`` names the server has no table or view for, as given.

        Names compare case-insensitively, as ``lower_case_table_names`` makes them on most servers;
        a table the account cannot see counts as missing.
        """
        if not tables:
            return frozenset()
        schemas = sorted({name.split(".", 1)[0] for name in tables})
        with self.get_conn() as connection, connection.cursor() as cursor:
            cursor.execute(
                "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA IN "
                f"({', '.join(['%s'] * len(schemas))})",
                schemas,
            )
            present = {f"{schema}.{table}".lower() for schema, table in cursor.fetchall()}
        return frozenset(name for name in tables if name.lower() not in present)

    def report_tables_read(self, endpoint: MySqlEndpoint, tables: Iterable[str]) -> None:
        """Tell Airflow's hook lineage collector that ``tables`` of ``endpoint`` (this connection's,
        as :meth:`get_endpoint` gave it) were read."""
        uris = [lineage.mysql_table_uri(endpoint.host, endpoint.port, table) for table in tables]
        lineage.report(self, inputs=uris)

    def check_prerequisites(self, config: PrerequisiteConfig) -> PrerequisiteReport:
        endpoint = self.get_endpoint()
        with self._connect(endpoint) as connection:
            return check_prerequisites(connection, config, server=str(endpoint))

    def assess_resumability(self, checkpoint: GtidSet) -> ResumabilityAssessment:
        """Reads purged before executed: executed only grows, so the pair is never inconsistent."""
        with self.get_conn() as connection, connection.cursor() as cursor:
            cursor.execute("SELECT @@GLOBAL.gtid_purged, @@GLOBAL.gtid_executed")
            purged, executed = cursor.fetchone()
        return assess_resumability(checkpoint, GtidSet.parse(purged), GtidSet.parse(executed))

    def _select_one(self, query: str) -> Any:
        with self.get_conn() as connection, connection.cursor() as cursor:
            cursor.execute(query)
            return cursor.fetchone()[0]

    def test_connection(self) -> tuple[bool, str]:
        try:
            version = self._select_one("SELECT VERSION()")
        except Exception as error:  # noqa: BLE001 - reported to the UI, not raised
            return False, str(error)
        return True, f"connected to MySQL {version}"
