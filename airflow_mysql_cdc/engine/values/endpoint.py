"""Where a MySQL server is and how to log in: the one value every engine connection is built from.

Invariant: the password never appears in ``repr``/``str`` of an endpoint, so an endpoint can be
logged, put in an exception or shown in a task log safely. It crosses into Spark through
environment variables (:meth:`MySqlEndpoint.to_environment`), never through process arguments,
which every user of the machine can read in ``ps``. How a connection is protected (TLS modes, the
shared TLS context, login errors that say what to do) is :mod:`.tls`; every engine connection opens
through :meth:`MySqlEndpoint.connect` or, for mysql-replication, :meth:`MySqlEndpoint.connection_factory`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any
from urllib.parse import unquote, urlsplit

import pymysql

from airflow_mysql_cdc.engine.values.tls import (
    ConnectionClass,
    TlsOptions,
    connection_factory,
    preferred_tls_context,
    ssl_arguments,
)

__all__ = ["DEFAULT_PORT", "ENVIRONMENT_VARIABLE", "MySqlEndpoint", "TlsOptions", "preferred_tls_context"]

DEFAULT_PORT = 3306
ENVIRONMENT_VARIABLE = "AIRFLOW_MYSQL_CDC_ENDPOINT"


@dataclass(frozen=True)
class MySqlEndpoint:
    host: str
    port: int = DEFAULT_PORT
    user: str = "root"
    password: str = field(default="", repr=False)
    database: str | None = None
    tls: TlsOptions = field(default_factory=TlsOptions)
    replication_server_id: int | None = None
    connect_timeout_s: int = 10
    server_public_key: str | None = None
    """The server's RSA public key (PEM) for ``caching_sha2_password`` without TLS; None: PyMySQL
    asks the server for it, which a machine in the middle could answer with its own key. Public:
    it travels with the endpoint, so executors need no file."""

    def __str__(self) -> str:
        return f"mysql://{self.user}@{self.host}:{self.port}/{self.database or ''}"

    @classmethod
    def from_url(cls, url: str) -> MySqlEndpoint:
        """Parse ``mysql://user:password@host:port/database`` (used for test and demo servers)."""
        parts = urlsplit(url)
        if parts.scheme not in ("mysql", "mysql_cdc", "mysql+pymysql"):
            raise ValueError(f"expected a mysql:// URL, got scheme {parts.scheme!r} in {parts.hostname!r}")
        return cls(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or DEFAULT_PORT,
            user=unquote(parts.username or "root"),
            password=unquote(parts.password or ""),
            database=parts.path.lstrip("/") or None,
        )

    def with_database(self, database: str | None) -> MySqlEndpoint:
        return replace(self, database=database)

    def connection_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``pymysql.connect`` and for mysql-replication's ``connection_settings``."""
        kwargs: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "connect_timeout": self.connect_timeout_s,
            "charset": "utf8mb4",
        }
        if self.database:
            kwargs["database"] = self.database
        if self.server_public_key:
            kwargs["server_public_key"] = self.server_public_key.encode()
        # The TLS context is built once per process and options (PyMySQL would build one per connection).
        kwargs.update(ssl_arguments(self.tls))
        return kwargs

    def connection_factory(
        self, connection_class: ConnectionClass = pymysql.connections.Connection
    ) -> ConnectionClass:
        """Opens ``connection_class(**settings)`` as :meth:`connect` does: PREFERRED falls back to a
        plain connection, failures caused by TLS or login settings say what to do."""
        return connection_factory(self.tls, f"{self.user}@{self.host}:{self.port}", connection_class)

    def connect(self, **overrides: Any) -> pymysql.connections.Connection:
        return self.connection_factory()(**{**self.connection_kwargs(), "autocommit": True, **overrides})

    def to_environment(self) -> dict[str, str]:
        """The endpoint as one environment variable for a child process (spark-submit)."""
        payload = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "tls"}
        payload["tls"] = {f.name: getattr(self.tls, f.name) for f in fields(TlsOptions)}
        return {ENVIRONMENT_VARIABLE: json.dumps(payload)}

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> MySqlEndpoint:
        try:
            payload = json.loads(environ[ENVIRONMENT_VARIABLE])
        except KeyError:
            raise LookupError(
                f"{ENVIRONMENT_VARIABLE} is not set: the MySQL endpoint is passed to the Spark application "
                "through the environment, never through arguments"
            ) from None
        payload["tls"] = TlsOptions(**payload.get("tls") or {})
        return cls(**payload)
