"""Where a MySQL server is and how to log in: the one value every engine connection is built from.

Invariant: the password never appears in ``repr``/``str`` of an endpoint, so an endpoint can be
logged, put in an exception or shown in a task log safely. It crosses into Spark through
environment variables (:meth:`MySqlEndpoint.to_environment`), never through process arguments,
which every user of the machine can read in ``ps``.
"""

from __future__ import annotations

import functools
import json
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any
from urllib.parse import unquote, urlsplit

import pymysql

DEFAULT_PORT = 3306
ENVIRONMENT_VARIABLE = "AIRFLOW_MYSQL_CDC_ENDPOINT"


@functools.cache
def preferred_tls_context() -> ssl.SSLContext:
    """The context PyMySQL builds for a connection without TLS options, built once per process.

    PyMySQL's ``_create_ssl_ctx({})`` loads the system's CA paths each time: 18-20 ms of CPU per
    connection, and a reader opens three (a range reader of parallel catch-up pays it per range).
    Same settings: TLS when the server offers it, no certificate or host name verification, the
    strict X.509 flag of Python 3.13 cleared. An ``SSLContext`` is meant to be shared.
    """
    context = ssl.create_default_context()
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


@dataclass(frozen=True)
class TlsOptions:
    """Client TLS settings, as PyMySQL's ``ssl`` dict wants them."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    verify_identity: bool = False

    def to_pymysql(self) -> dict[str, Any] | None:
        if not (self.ca or self.cert or self.key):
            return None
        options: dict[str, Any] = {"check_hostname": self.verify_identity}
        for name in ("ca", "cert", "key"):
            if value := getattr(self, name):
                options[name] = value
        return options


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
        # Without TLS options PyMySQL still uses TLS when the server offers it ("preferred", no
        # verification), building the same context for every connection; it is built once here.
        kwargs["ssl"] = self.tls.to_pymysql() or preferred_tls_context()
        return kwargs

    def connect(self, **overrides: Any) -> pymysql.connections.Connection:
        return pymysql.connect(**{**self.connection_kwargs(), "autocommit": True, **overrides})

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
