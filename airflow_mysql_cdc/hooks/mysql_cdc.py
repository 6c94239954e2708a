"""Airflow hook: turns an Airflow connection into the engine's :class:`MySqlEndpoint`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pymysql
from airflow.sdk import BaseHook

from airflow_mysql_cdc.engine.mysql.prerequisites.checks import (
    PrerequisiteConfig,
    PrerequisiteReport,
    check_prerequisites,
)
from airflow_mysql_cdc.engine.mysql.server_state import ServerState, read_server_state
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint, TlsOptions
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.resumability import ResumabilityAssessment, assess_resumability

SUPPORTED_CONNECTION_TYPES = ("mysql_cdc", "mysql")


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


class MySqlCdcHook(BaseHook):
    """Connects to the source MySQL server of a CDC pipeline.

    Accepts ``mysql_cdc`` connections and the standard ``mysql`` ones, so an existing MySQL
    connection can be reused. Extras: ``ssl_ca``, ``ssl_cert``, ``ssl_key``,
    ``ssl_verify_identity`` and ``server_id`` (the replication server_id binlog readers use; it
    must differ from the server's and every other replica's). The mysql provider's ``ssl`` extra
    (a dict or JSON string with ``ca``/``cert``/``key``) is understood too.
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
        legacy_ssl = extra.get("ssl") or {}
        if isinstance(legacy_ssl, str):
            legacy_ssl = json.loads(legacy_ssl)
        server_id = extra.get("server_id")
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
            ),
            replication_server_id=int(server_id) if server_id not in (None, "") else None,
        )

    def get_conn(self) -> pymysql.connections.Connection:
        return self.get_endpoint().connect()

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

    def check_prerequisites(self, config: PrerequisiteConfig) -> PrerequisiteReport:
        endpoint = self.get_endpoint()
        with endpoint.connect() as connection:
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
