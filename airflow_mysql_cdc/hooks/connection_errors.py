"""What a user reads when the source connection cannot be opened, and whether a retry can help.

Invariant: every failure to *open* a connection through
:class:`~airflow_mysql_cdc.hooks.mysql_cdc.MySqlCdcHook` reaches the task as one of two errors that
name the Airflow connection id, the server (``mysql://user@host:port/``, never the password), what
happened and what to change:

- :class:`SourceLoginError` (an ``AirflowFailException``: the task fails at once, its retries
  unused) when only a change of configuration helps: a refused login (wrong password, no such
  account, no account for this worker's host, no access to the connection's database, an unknown
  database), a host name DNS does not know, TLS that cannot be agreed or verified (the advice of
  :func:`airflow_mysql_cdc.engine.values.tls.login_advice`). Retrying them only repeats the error
  later: a wrong password was retried twice, with PyMySQL's raw ``(1045, "Access denied ...")`` and a
  traceback as the only message (issue 26).
- :class:`SourceUnreachableError` (an ``AirflowException``: retried) when the server may come back
  by itself: the port refuses or does not answer (a restart, a failover), DNS fails temporarily,
  the server has no free connection slot.

What the task log shows: Airflow 3's task runner logs every failure with its traceback
(``log.exception("Task failed with exception")``, for ``AirflowFailException`` too), so the
message alone cannot be had. The error is raised ``from None`` (no PyMySQL traceback chained
above it), and the operator that called the hook re-raises it with ``with_traceback(None)``, so
the frames it passed through in the hook (11 frames under the message, issue 34) are not shown:
the log holds Airflow's runner frames, the operator's one line, and the message.

The GTID trigger turns either into an event (:meth:`to_event`) and the resumed sensor raises the
same error again (:func:`from_event`), so poke, reschedule and deferrable mode fail alike.
Guarded by tests/unit/airflow/hooks/test_connection_errors.py and, with a real server and a wrong
password, tests/integration/test_gtid_sensors_in_a_dag.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pymysql
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.engine.values.tls import MySqlLoginError

_ER_DBACCESS_DENIED = 1044
_ER_ACCESS_DENIED = 1045
_ER_BAD_DB = 1049
_ER_CON_COUNT = 1040
_ER_HOST_IS_BLOCKED = 1129
_ER_HOST_NOT_PRIVILEGED = 1130
_CR_CONN_HOST_ERROR = 2003
_CR_UNKNOWN_HOST = 2005
_UNKNOWN_NAME = ("Name or service not known", "nodename nor servname provided", "No address associated")

_WHERE_CONNECTIONS_ARE = (
    "Admin > Connections in the UI, `airflow connections` on the command line, or the secrets backend "
    "that holds it"
)
EDIT_THE_CONNECTION = f"Edit the connection ({_WHERE_CONNECTIONS_ARE})"
_EDIT_THE_CONNECTION = f"edit the connection ({_WHERE_CONNECTIONS_ARE})"


class SourceLoginError(AirflowFailException, MySqlLoginError):
    """The connection cannot be opened until its configuration (or the account) changes: no retry."""

    retryable = False


class SourceUnreachableError(AirflowException):
    """The server did not answer or had no room; it may come back (a restart, a failover): retried."""

    retryable = True


SourceConnectionError = SourceLoginError | SourceUnreachableError
SOURCE_CONNECTION_ERRORS = (SourceLoginError, SourceUnreachableError)
"""For ``except``: an operator re-raises these ``error.with_traceback(None) from None`` (below)."""


def explain_connection_failure(
    conn_id: str, server: str, error: Exception
) -> SourceLoginError | SourceUnreachableError | None:
    """The error a user should read for ``error`` met while opening ``conn_id`` (None: not ours to say).

    ``server`` is the endpoint's ``str`` (no password)."""
    where = f"connection {conn_id!r} ({server})"
    if isinstance(error, MySqlLoginError):
        return SourceLoginError(f"{where}: {error} Not retried: only a change of configuration helps.")
    if not isinstance(error, pymysql.err.MySQLError) or not error.args or not isinstance(error.args[0], int):
        return None
    code, said = error.args[0], str(error.args[-1])
    not_retried = "Then clear the task; it is not retried, since a retry would fail the same way."
    if code == _ER_ACCESS_DENIED:
        return SourceLoginError(
            f"{where}: MySQL refused the login ({said}). The connection's login or password is wrong, or "
            "the account does not exist for the host this worker connects from. "
            f"{EDIT_THE_CONNECTION} to hold the right login and password, or fix the account on the "
            f"server (CREATE USER / ALTER USER ... IDENTIFIED BY, docs/platforms/README.md). {not_retried}"
        )
    if code == _ER_HOST_NOT_PRIVILEGED:
        return SourceLoginError(
            f"{where}: the server has no account this worker's host may log in as ({said}). Create the "
            "account for the host the Airflow workers and Spark executors connect from (CREATE USER "
            f"'<login>'@'<host or %>' ...), or {_EDIT_THE_CONNECTION} "
            f"to use such an account. {not_retried}"
        )
    if code in (_ER_DBACCESS_DENIED, _ER_BAD_DB):
        return SourceLoginError(
            f"{where}: the connection's database (its schema field) cannot be opened ({said}). The "
            "pipeline names its tables as schema.table and needs no default database: "
            f"{_EDIT_THE_CONNECTION} to empty that field or name a "
            f"database the account may use. {not_retried}"
        )
    if code == _ER_HOST_IS_BLOCKED:
        return SourceLoginError(
            f"{where}: the server blocks this worker's host after too many failed connection attempts "
            f"({said}). Run FLUSH HOSTS (or TRUNCATE performance_schema.host_cache) on the server, and "
            f"raise max_connect_errors if something keeps failing to connect. {not_retried}"
        )
    if code in (_CR_CONN_HOST_ERROR, _CR_UNKNOWN_HOST) and any(text in said for text in _UNKNOWN_NAME):
        return SourceLoginError(
            f"{where}: this worker's DNS does not know the host ({said}). {EDIT_THE_CONNECTION} to name "
            f"the server's host as this worker can resolve it. {not_retried}"
        )
    if code in (_CR_CONN_HOST_ERROR, _CR_UNKNOWN_HOST, _ER_CON_COUNT) or 2000 <= code < 2100:
        return SourceUnreachableError(
            f"{where}: the MySQL server cannot be reached now ({said}). The task is retried (per its "
            "retries): a restarting or failing-over server comes back by itself. If it persists, check "
            "the connection's host and port, that MySQL listens there (port, bind_address), that no "
            "firewall or security group blocks this worker, and max_connections on the server."
        )
    return None


@contextmanager
def explained_connection_failures(conn_id: str, server: str) -> Iterator[None]:
    """Opening a connection inside: a failure becomes :func:`explain_connection_failure`'s error."""
    try:
        yield
    except (pymysql.err.MySQLError, MySqlLoginError) as error:
        explained = explain_connection_failure(conn_id, server, error)
        if explained is None:
            raise
        # from None: the message carries the driver's text; its chained traceback only buried it.
        raise explained from None


def to_event(error: SourceConnectionError) -> JsonObject:
    """The trigger event for a connection failure (the resumed sensor raises it again)."""
    return {"state": "error", "message": str(error), "retryable": error.retryable, "payload": {}}


def from_event(event: JsonObject) -> SourceConnectionError:
    """The error a :func:`to_event` event stands for."""
    if event.get("retryable"):
        return SourceUnreachableError(event["message"])
    return SourceLoginError(event["message"])
