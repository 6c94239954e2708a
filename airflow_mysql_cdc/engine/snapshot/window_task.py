"""What a Spark executor runs for a snapshot: one window (:mod:`.window`), on the worker's connection.

Invariant: this module and everything it imports load without deltalake, Spark or Airflow, so an
executor needs only the engine's executor requirements (docs/deployment.md); the driver alone
writes Delta (:mod:`.lake_commits`). Guarded by
``test_what_an_executor_imports_loads_no_delta_writer_spark_or_airflow``.
A window is a pure read of the source: rerunning it is always safe.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import pymysql

from airflow_mysql_cdc.engine.mysql.schema import Column, TableRef
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.window import ChunkSnapshot, open_window_connection, read_window
from airflow_mysql_cdc.engine.snapshot.window_ipc import encode_window
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint


@dataclass(frozen=True)
class WindowTask:
    """Everything one window needs; picklable so Spark can ship it to an executor."""

    endpoint: MySqlEndpoint
    table: TableRef
    columns: tuple[ColumnType, ...]
    key: tuple[str, ...]
    key_columns: tuple[Column, ...]
    chunk: Chunk
    reader_server_id: int | None

    def run(self, connection: pymysql.connections.Connection | None = None) -> ChunkSnapshot:
        """The window, on ``connection`` (from :func:`.open_window_connection`) or a new one."""
        return read_window(
            self.endpoint, self.table, self.columns, self.key, self.key_columns, self.chunk,
            reader_server_id=self.reader_server_id, connection=connection,
        )  # fmt: skip


WindowRunner = Callable[[Sequence[WindowTask]], Iterable[ChunkSnapshot]]

_PROCESS_CONNECTIONS: dict[MySqlEndpoint, pymysql.connections.Connection] = {}


def run_on_process_connection(task: WindowTask) -> ChunkSnapshot:
    """The window on this process's idle connection to its endpoint, opened by an earlier window.

    Spark reuses a Python worker for task after task, so a worker opens one connection instead of
    one per window (opening one cost 26 ms, a sixth of a 20,000-row window). A connection that
    fails its ping, or whose window raised, is closed and never reused.
    """
    connection = _PROCESS_CONNECTIONS.pop(task.endpoint, None)
    if connection is not None:
        try:
            connection.ping(reconnect=False)
        except pymysql.err.Error:
            _discard(connection)
            connection = None
    if connection is None:
        connection = open_window_connection(task.endpoint)
    try:
        window = task.run(connection)
    except BaseException:
        _discard(connection)
        raise
    _PROCESS_CONNECTIONS[task.endpoint] = connection
    return window


def _discard(connection: pymysql.connections.Connection) -> None:
    with contextlib.suppress(pymysql.err.Error):
        connection.close()


def run_sequentially(tasks: Sequence[WindowTask]) -> Iterator[ChunkSnapshot]:
    """The windows one after another, sharing a connection per endpoint."""
    endpoint: MySqlEndpoint | None = None
    connection: pymysql.connections.Connection | None = None
    try:
        for task in tasks:
            if connection is None or task.endpoint != endpoint:
                if connection is not None:
                    connection.close()
                endpoint, connection = task.endpoint, open_window_connection(task.endpoint)
            yield task.run(connection)
    finally:
        if connection is not None:
            connection.close()


def window_as_ipc(task: WindowTask) -> bytes:
    """The Spark task of a snapshot: the window on the worker's connection, as Arrow IPC bytes."""
    return encode_window(run_on_process_connection(task))
