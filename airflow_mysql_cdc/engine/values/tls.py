"""How a connection to MySQL is protected: the TLS mode, its files, and what to do when login fails.

Invariants:

- **The five modes of the MySQL client, with its meanings** (``--ssl-mode``; the mysql provider's
  ``ssl_mode`` extra): ``DISABLED`` never uses TLS; ``PREFERRED`` uses it when the server offers it
  and falls back to a plain connection when it does not; ``REQUIRED`` refuses a plain connection but
  checks no certificate; ``VERIFY_CA`` also checks the certificate against ``ca`` (the system's CAs
  without one); ``VERIFY_IDENTITY`` also checks that it names the host. Without a mode, the files
  given choose it (:meth:`TlsOptions.effective_mode`), as the options did before modes existed.
- **One context per set of options per process** (:func:`tls_context`). PyMySQL builds an
  ``SSLContext`` per connection, loading the system's CA paths each time (18-20 ms of CPU; a reader
  opens three connections, a range reader of parallel catch-up pays it per range). A context is
  meant to be shared; it holds no secret. Certificate files rotated on disk are read by the next
  process (an Airflow task, a Spark application), not by one already running.
- **PREFERRED really falls back.** PyMySQL treats a context passed as ``ssl`` as *required* TLS, so
  :func:`connection_factory` retries without TLS when the server offers none (measured on MySQL
  9.7 started with ``--tls-version=``: "SSL is required but the server doesn't support it"). Guarded
  by ``test_caching_sha2_password_without_tls_logs_in_everywhere_by_rsa_key_exchange``.
- **A failed login says what to do** (:class:`MySqlLoginError`): no ``cryptography`` for the RSA
  key exchange ``caching_sha2_password`` uses without TLS, a server that requires TLS, a certificate
  that fails verification. Guarded by ``tests/integration/test_managed_mysql.py``.
"""

from __future__ import annotations

import functools
import socket
import ssl
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

import pymysql

from airflow_mysql_cdc.engine.errors import ConfigurationError

TlsMode = Literal["DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"]
TLS_MODES: tuple[TlsMode, ...] = get_args(TlsMode)

_CR_SSL_CONNECTION_ERROR = 2026
_CR_CONN_HOST_ERROR = 2003
_ER_SECURE_TRANSPORT_REQUIRED = 3159


def parse_tls_mode(text: str | None) -> TlsMode | None:
    """``ssl_mode`` as written in a connection extra (any case, ``-`` or ``_``); None when unset."""
    if text is None or not str(text).strip():
        return None
    mode = str(text).strip().upper().replace("-", "_")
    if mode not in TLS_MODES:
        raise ValueError(
            f"ssl_mode {text!r} is not one of {', '.join(TLS_MODES)} (the MySQL client's --ssl-mode)"
        )
    return mode


@dataclass(frozen=True)
class TlsOptions:
    """Client TLS settings. File paths are read where a connection opens: on the Airflow worker, the
    Spark driver and every Spark executor (snapshot windows, range readers), so they must exist there."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    verify_identity: bool = False
    mode: TlsMode | None = None
    """None: chosen by the files (:meth:`effective_mode`)."""

    def __post_init__(self) -> None:
        if self.mode is not None and self.mode not in TLS_MODES:
            raise ValueError(f"ssl_mode {self.mode!r} is not one of {', '.join(TLS_MODES)}")
        if self.mode == "DISABLED" and (self.ca or self.cert or self.key or self.verify_identity):
            raise ValueError(
                "ssl_mode DISABLED contradicts the TLS files or ssl_verify_identity also set on the "
                "connection: remove ssl_mode to use TLS with them, or remove them to connect without TLS"
            )
        if bool(self.cert) != bool(self.key):
            raise ValueError("ssl_cert and ssl_key go together: a client certificate needs its private key")

    @property
    def effective_mode(self) -> TlsMode:
        if self.mode is not None:
            return self.mode
        if self.verify_identity:
            return "VERIFY_IDENTITY"
        if self.ca:
            return "VERIFY_CA"
        return "REQUIRED" if self.cert else "PREFERRED"


@functools.cache
def preferred_tls_context() -> ssl.SSLContext:
    """The context of PREFERRED and REQUIRED without a client certificate, built once per process.

    Same settings as PyMySQL's own for a connection without TLS options: no certificate or host
    name verification, the strict X.509 flag of Python 3.13 cleared (MySQL's auto-generated
    certificates fail it).
    """
    return tls_context(TlsOptions())


@functools.cache
def tls_context(options: TlsOptions) -> ssl.SSLContext:
    """The ``SSLContext`` for ``options`` (not DISABLED), built once per process."""
    mode = options.effective_mode
    verify = mode in ("VERIFY_CA", "VERIFY_IDENTITY")
    try:
        context = ssl.create_default_context(cafile=options.ca) if verify else ssl.create_default_context()
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
        context.check_hostname = mode == "VERIFY_IDENTITY"
        context.verify_mode = ssl.CERT_REQUIRED if verify else ssl.CERT_NONE
        if options.cert:
            context.load_cert_chain(options.cert, keyfile=options.key)
    except OSError as error:  # ssl.SSLError is one too
        files = ", ".join(f"{name} {path}" for name, path in _files(options))
        raise MySqlLoginError(
            f"the TLS files of the MySQL connection ({files}) cannot be read on {socket.gethostname()}: "
            f"{error}. Every machine that connects reads them: the Airflow worker, the Spark driver and "
            "every Spark executor (snapshot windows, range readers); put them at the same path on each."
        ) from None
    return context


def _files(options: TlsOptions) -> list[tuple[str, str]]:
    return [(f"ssl_{name}", path) for name in ("ca", "cert", "key") if (path := getattr(options, name))]


def ssl_arguments(options: TlsOptions) -> dict[str, Any]:
    """``pymysql.connect`` keyword arguments for ``options``."""
    if options.effective_mode == "DISABLED":
        return {"ssl_disabled": True}
    return {"ssl": tls_context(options)}


class MySqlLoginError(ConfigurationError):
    """A connection could not be set up for a reason only a change of configuration fixes.

    Deliberately no ``pymysql.err.OperationalError``: reconnect loops retry those (2003 included),
    and retrying a refused certificate or a missing package only hides the message.
    """


ConnectionClass = Callable[..., pymysql.connections.Connection]


def connection_factory(
    options: TlsOptions, where: str, connection_class: ConnectionClass = pymysql.connections.Connection
) -> ConnectionClass:
    """``connection_class(**settings)``, falling back to plain TCP in PREFERRED mode when the server
    offers no TLS, with errors that say what to do. ``where`` names the server in messages
    (``user@host:port``). mysql-replication takes it as its ``pymysql_wrapper``."""

    def connect(**settings: Any) -> pymysql.connections.Connection:
        try:
            try:
                return connection_class(**settings)
            except pymysql.err.OperationalError as error:
                if not (options.effective_mode == "PREFERRED" and _server_offers_no_tls(error)):
                    raise
            plain = {**settings, "ssl": None, "ssl_disabled": True}
            return connection_class(**plain)
        except RuntimeError as error:
            if "cryptography" not in str(error):
                raise
            raise MySqlLoginError(_no_cryptography(where)) from None
        except pymysql.err.OperationalError as error:
            advice = login_advice(error, options, where)
            if advice is None:
                raise
            raise MySqlLoginError(advice) from error

    return connect


def _server_offers_no_tls(error: pymysql.err.OperationalError) -> bool:
    return error.args[0] == _CR_SSL_CONNECTION_ERROR and "doesn't support" in str(error.args[-1])


def _no_cryptography(where: str) -> str:
    return (
        f"MySQL asked for {where}'s password by RSA key exchange (caching_sha2_password or "
        "sha256_password over a connection without TLS, the first login after a server restart or "
        f"FLUSH PRIVILEGES), and this Python ({sys.executable}) lacks the 'cryptography' package that "
        "encrypts it. Install it here (pip install 'PyMySQL[rsa]'; on Spark executors too, which open "
        "their own connections), or connect over TLS (the password then travels inside TLS and "
        "needs no RSA): remove ssl_mode DISABLED from the connection, or enable TLS on the server."
    )


def login_advice(error: pymysql.err.OperationalError, options: TlsOptions, where: str) -> str | None:
    """What to do about a connection error caused by TLS or authentication settings (None: other)."""
    code, message = error.args[0], str(error.args[-1])
    mode = options.effective_mode
    if code == _ER_SECURE_TRANSPORT_REQUIRED:
        return (
            f"{where}: the server accepts only TLS connections (require_secure_transport=ON) and the "
            f"connection's ssl_mode is {mode}. Remove ssl_mode DISABLED from the connection's extras "
            "(or set ssl_mode to REQUIRED / VERIFY_CA with ssl_ca, see docs/platforms/README.md)."
        )
    if code == _CR_SSL_CONNECTION_ERROR and "doesn't support" in message:
        return (
            f"{where}: the server offers no TLS, and the connection's ssl_mode is {mode}. Enable TLS "
            "on the server (ssl_ca/ssl_cert/ssl_key, tls_version), or set ssl_mode PREFERRED or "
            "DISABLED on the connection if a plain connection is acceptable on this network."
        )
    if code == _CR_CONN_HOST_ERROR and "CERTIFICATE_VERIFY_FAILED" in message:
        reason = message.split("CERTIFICATE_VERIFY_FAILED]", 1)[-1].split("(_ssl", 1)[0].strip(" ()")
        return (
            f"{where}: TLS verification of the server's certificate failed ({reason}); ssl_mode "
            f"{mode}, ssl_ca {options.ca or '(the system CAs)'}. ssl_ca must be the CA that signed the "
            "server's certificate (RDS/Aurora: the region's certificate bundle; Cloud SQL: the "
            "instance's server CA; self-hosted: the server's ca.pem). VERIFY_IDENTITY also needs a "
            "certificate naming the host you connect to (MySQL's auto-generated certificates name "
            "none: use VERIFY_CA with them, or connect by the name in the certificate)."
        )
    return None
