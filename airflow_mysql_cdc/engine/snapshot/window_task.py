"""What a Spark executor runs for a snapshot: one window (:mod:`.window`), on the worker's connection,
its rows written as a Parquet file under the target table (:mod:`~airflow_mysql_cdc.engine.lake.data_files`).

Invariant: this module and everything it imports load without deltalake, Spark or Airflow, so an
executor needs only the engine's executor requirements (docs/deployment.md); the driver alone
commits to Delta (:mod:`.lake_commits`). Guarded by
``test_what_an_executor_imports_loads_no_delta_writer_spark_or_airflow``.
A window is a pure read of the source and its file is referenced by no commit until the driver
commits it, so rerunning a task is always safe.

A task shipped to an executor carries no credential: :func:`for_executors` strips the MySQL
password and the lake's secret storage options and names the application's broadcast secrets
instead (:mod:`~airflow_mysql_cdc.engine.runtime.executor_secrets`), which the task reads where it runs.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import pymysql

from airflow_mysql_cdc.engine.lake.data_files import DataFile, write_data_file
from airflow_mysql_cdc.engine.lake.delta_layout import snapshot_rows
from airflow_mysql_cdc.engine.lake.storage import split_storage_options
from airflow_mysql_cdc.engine.mysql.schema import Column, TableRef
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.runtime.executor_secrets import SecretsReference
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.key_codec import decode_key, encode_key
from airflow_mysql_cdc.engine.snapshot.window import ChunkSnapshot, open_window_connection, read_window
from airflow_mysql_cdc.engine.snapshot.window_ipc import decode_window, encode_window
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet


@dataclass(frozen=True)
class FileTarget:
    """Where a task writes its window's rows: the target table's location and how to reach it."""

    table_uri: str
    storage_options: dict[str, str] = field(default_factory=dict, repr=False)
    """The lake's delta-rs options; on an executor the public ones only (:func:`for_executors`)."""


@dataclass(frozen=True)
class WrittenWindow:
    """A window whose rows are in data files no commit references yet: what the driver commits."""

    chunk: Chunk
    low_watermark: GtidSet
    high_watermark: GtidSet
    rows: int
    files: tuple[DataFile, ...]
    high_read_us: int | None = None
    """The server's clock when the high watermark was read (:attr:`.window.ChunkSnapshot.high_read_us`)."""


WindowOutcome = ChunkSnapshot | WrittenWindow
"""A window with its rows (the driver writes them) or with the files a task wrote them to."""


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
    target: FileTarget | None = None
    """Write the rows there (None: hand them back)."""
    secrets: SecretsReference | None = None
    """Where the credentials stripped from this task are (None: the task holds its own)."""

    def run(self, connection: pymysql.connections.Connection | None = None) -> ChunkSnapshot:
        """The window, on ``connection`` (from :func:`.open_window_connection`) or a new one."""
        return read_window(
            self.endpoint, self.table, self.columns, self.key, self.key_columns, self.chunk,
            reader_server_id=self.reader_server_id, connection=connection,
        )  # fmt: skip

    def outcome(self, window: ChunkSnapshot) -> WindowOutcome:
        """The window as the driver gets it: written to a file when the task has a target."""
        if self.target is None:
            return window
        data = snapshot_rows(self.columns, window.rows)
        files = (write_data_file(self.target.table_uri, data, self.target.storage_options),)
        return WrittenWindow(
            window.chunk, window.low_watermark, window.high_watermark, data.num_rows, files,
            window.high_read_us,
        )  # fmt: skip

    def with_secrets(self) -> WindowTask:
        """This task with the credentials :func:`for_executors` took out of it put back."""
        if self.secrets is None:
            return self
        secrets = self.secrets.read()
        target = self.target
        if target is not None:
            target = replace(target, storage_options={**target.storage_options, **secrets["lake"]})
        endpoint = replace(self.endpoint, password=secrets["mysql"])
        return replace(self, endpoint=endpoint, target=target, secrets=None)


def for_executors(
    tasks: Sequence[WindowTask], publish: Callable[[dict], SecretsReference]
) -> list[WindowTask]:
    """``tasks`` without credentials, naming the secrets ``publish`` shares instead."""
    shipped = []
    for task in tasks:
        public, secret = split_storage_options(task.target.storage_options if task.target else {})
        reference = publish({"mysql": task.endpoint.password, "lake": secret})
        target = replace(task.target, storage_options=public) if task.target else None
        shipped.append(
            replace(task, endpoint=replace(task.endpoint, password=""), target=target, secrets=reference)
        )
    return shipped


WindowRunner = Callable[[Sequence[WindowTask]], Iterable[list[WindowOutcome]]]
"""Runs windows and yields their outcomes in waves: each wave is committed in one Delta transaction."""

_PROCESS_CONNECTIONS: dict[MySqlEndpoint, pymysql.connections.Connection] = {}


def run_on_process_connection(task: WindowTask) -> WindowOutcome:
    """The window on this process's idle connection to its endpoint, opened by an earlier window.

    Spark reuses a Python worker for task after task, so a worker opens one connection instead of
    one per window (opening one cost 26 ms, a sixth of a 20,000-row window). A connection that
    fails its ping, or whose window raised, is closed and never reused.
    """
    task = task.with_secrets()
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
    return task.outcome(window)


def _discard(connection: pymysql.connections.Connection) -> None:
    with contextlib.suppress(pymysql.err.Error):
        connection.close()


def run_sequentially(tasks: Sequence[WindowTask]) -> Iterator[list[WindowOutcome]]:
    """The windows one after another in this process, sharing a connection per endpoint; a wave each."""
    endpoint: MySqlEndpoint | None = None
    connection: pymysql.connections.Connection | None = None
    try:
        for task in tasks:
            if connection is None or task.endpoint != endpoint:
                if connection is not None:
                    connection.close()
                endpoint, connection = task.endpoint, open_window_connection(task.endpoint)
            yield [task.outcome(task.run(connection))]
    finally:
        if connection is not None:
            connection.close()


def encode_outcome(outcome: WindowOutcome) -> bytes:
    """A window's outcome as the bytes a Spark task returns: Arrow IPC rows, or a small JSON of files."""
    if isinstance(outcome, ChunkSnapshot):
        return encode_window(outcome)
    description = {
        "chunk": {"index": outcome.chunk.index, "lower": encode_key(outcome.chunk.lower),
                  "upper": encode_key(outcome.chunk.upper)},
        "low": str(outcome.low_watermark), "high": str(outcome.high_watermark), "rows": outcome.rows,
        "high_read_us": outcome.high_read_us, "files": [file.to_json() for file in outcome.files],
    }  # fmt: skip
    return _WRITTEN + json.dumps(description, separators=(",", ":")).encode()


def decode_outcome(payload: bytes) -> WindowOutcome:
    """The outcome :func:`encode_outcome` encoded."""
    if not payload.startswith(_WRITTEN):
        return decode_window(payload)
    description = json.loads(payload[len(_WRITTEN) :])
    chunk = description["chunk"]
    return WrittenWindow(
        chunk=Chunk(chunk["index"], decode_key(chunk["lower"]), decode_key(chunk["upper"])),
        low_watermark=GtidSet.parse(description["low"]),
        high_watermark=GtidSet.parse(description["high"]),
        rows=description["rows"],
        files=tuple(DataFile.from_json(file) for file in description["files"]),
        high_read_us=description.get("high_read_us"),
    )


_WRITTEN = b"airflow_mysql_cdc.written_window:"
"""Prefix of a written window's payload (an Arrow IPC stream never starts with it)."""


def window_outcome_bytes(task: WindowTask) -> bytes:
    """The Spark task of a snapshot: the window on the worker's connection, encoded for the driver."""
    return encode_outcome(run_on_process_connection(task))
