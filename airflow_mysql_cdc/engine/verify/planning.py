"""Which tables a verification compares, and what it compares of each, in order.

Invariant: a table is planned only when the lake can be expected to hold it at the position ``E``
(:mod:`.run`, the reasons it is not compared); a planned table's chunks are, in this order, the
chunks an earlier verification left to check again (:mod:`.pending`; a ``full`` plan holds them
all), a chunk ending at each key the target holds twice outside the planned chunks
(:mod:`.lake_rows`), then the run's own chunks: the sample's next ones after its cursor
(:mod:`.rotation`), every one, or those of a key range. Every chunk of a plan has its own index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pymysql
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.lake.departures import departure_holds
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineState
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.lake.state.table_positions import pipeline_app_id
from airflow_mysql_cdc.engine.mysql.definition import TableDefinition
from airflow_mysql_cdc.engine.mysql.schema import (
    TableMetadata,
    TableRef,
    quote_identifier,
    read_table_metadata,
)
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk, plan_chunks
from airflow_mysql_cdc.engine.snapshot.key_order import KeyOrder
from airflow_mysql_cdc.engine.snapshot.lake_commits import progress_from_records
from airflow_mysql_cdc.engine.verify.comparable import Key
from airflow_mysql_cdc.engine.verify.lake_rows import KeyedRows, LakeRows, LakeSchemaDifferenceError
from airflow_mysql_cdc.engine.verify.pending import PendingChunk, as_chunks
from airflow_mysql_cdc.engine.verify.report import Status, TableReport
from airflow_mysql_cdc.engine.verify.rotation import SampleCursor
from airflow_mysql_cdc.engine.verify.settings import VerifySettings, VerifySettingsError
from airflow_mysql_cdc.engine.verify.verify_log import VerifyRecord

MAX_DUPLICATE_CHUNKS = 100
"""Keys held twice outside the planned chunks that one verification compares (each a chunk of its
own, so a repair rewrites them); the rest are counted and named, and compared by a later run."""


@dataclass
class PlannedTable:
    ref: TableRef
    metadata: TableMetadata
    columns: tuple[ColumnType, ...]
    lake_rows: LakeRows
    chunks: list[Chunk]
    """This run's planned chunks (the sample's next ones, every one, or a key range's)."""
    cursor: SampleCursor
    again: list[Chunk] = field(default_factory=list)
    """Checked first: an earlier verification's pending chunks, then chunks ending at keys held twice."""
    why_again: dict[int, str] = field(default_factory=dict)
    """Why each chunk of ``again`` is checked (by chunk index)."""
    held_twice: list[tuple[Key, int]] = field(default_factory=list)
    previous_pending: tuple[PendingChunk, ...] = ()
    held_twice_left: int = 0
    """Keys held twice that no chunk of this verification holds (over :data:`MAX_DUPLICATE_CHUNKS`)."""
    rechecking: int = 0
    """How many of ``again`` are an earlier verification's pending chunks (the first ones)."""
    pending: tuple[PendingChunk, ...] = ()
    """What this verification leaves to the next (set once compared)."""
    report: TableReport = field(init=False)

    def __post_init__(self) -> None:
        self.report = TableReport(str(self.ref), chunks_planned=len(self.chunks) + len(self.again))


def plan_table(
    lake: LakeState,
    state: PipelineState,
    connection: pymysql.connections.Connection,
    ref: TableRef,
    settings: VerifySettings,
    previous: VerifyRecord | None,
) -> PlannedTable | TableReport:
    """The table's chunks to compare, or why it is not compared."""
    name = str(ref)
    target = lake.target(ref)
    if target is None:
        return TableReport(
            name, status="inconclusive",
            reason="the lake has no target table for it yet (its first run has not finished)",
        )  # fmt: skip
    not_streamed = _not_streamed(lake, state, ref, target)
    if not_streamed is not None:
        return not_streamed
    with connection.cursor() as meta_cursor:
        metadata = read_table_metadata(meta_cursor, ref)
    if metadata is None or not metadata.has_row_key:
        return TableReport(
            name, status="inconclusive",
            reason="the source table is gone or has no row key now (a DDL after the position?)",
        )  # fmt: skip
    columns = TableDefinition.of(metadata).column_types
    try:
        lake_rows = LakeRows(
            target, columns, metadata.key_columns, metadata.row_key_columns,
            KeyOrder(connection, metadata.row_key_columns),
        )  # fmt: skip
    except LakeSchemaDifferenceError as error:
        return TableReport(
            name, status="mismatch", reason=f"the lake's columns differ from the source's: {error}"
        )
    cursor = previous.cursor if previous is not None else SampleCursor()
    chunks, cursor = _chunks(connection, metadata, settings, cursor)
    planned = PlannedTable(ref, metadata, columns, lake_rows, chunks, cursor)
    if not settings.key_range:
        planned.previous_pending = previous.pending if previous is not None else ()
        _plan_again(planned, connection, settings)
    return planned


def _not_streamed(
    lake: LakeState, state: PipelineState, ref: TableRef, target: DeltaTable
) -> TableReport | None:
    """Why the lake cannot be expected to hold the table at the position (None: it can)."""
    name = str(ref)

    def not_compared(reason: str, status: Status = "inconclusive") -> TableReport:
        return TableReport(name, status=status, reason=reason)

    progress = progress_from_records(lake.snapshot_records(ref, target))
    departure = lake.departure(ref)
    if departure_holds(departure, progress.stream_start if progress is not None else None):
        assert departure is not None
        return not_compared(
            f"it left the pipeline: {departure.describe()}; its target keeps the rows it had there, and "
            "a snapshot taken after that brings it back",
            "skipped",
        )
    if state.members is not None and name not in state.members:
        mark = lake.pause(ref)
        if mark is not None:
            return not_compared(
                f"{mark.describe()}: its rows are frozen there, not at the position", "skipped"
            )
        return not_compared("the pipeline does not stream it yet: it joins at its next run")
    if progress is not None and not progress.complete:
        return not_compared("its snapshot is unfinished; the next run finishes it")
    if target.transaction_version(pipeline_app_id(lake.pipeline_id)) in (state.intents or {}):
        return not_compared(
            "it holds changes beyond the position after an interrupted run; the next run settles it"
        )
    return None


def _plan_again(
    table: PlannedTable, connection: pymysql.connections.Connection, settings: VerifySettings
) -> None:
    """What ``table`` checks first: the pending chunks (a full verification's plan holds them all),
    then a chunk ending at each key the target holds twice outside the planned chunks."""
    planned = {(repr(chunk.lower), repr(chunk.upper)) for chunk in table.chunks}
    pending = [
        item
        for item in (table.previous_pending if settings.mode == "sample" else ())
        if (repr(item.lower), repr(item.upper)) not in planned  # the sample checks it anyway
    ]
    again = as_chunks(pending, len(table.chunks))
    table.why_again = {chunk.index: item.describe() for chunk, item in zip(again, pending, strict=True)}
    table.rechecking = len(again)
    table.held_twice = table.lake_rows.held_twice()
    if table.held_twice:
        keys = pa.table(
            {
                name: [key[index] for key, _ in table.held_twice]
                for index, name in enumerate(table.metadata.key_columns)
            },
            schema=pa.schema([table.lake_rows.schema.field(name) for name in table.metadata.key_columns]),
        )
        placed = KeyedRows(keys, table.metadata.key_columns, table.lake_rows.order).by_chunk(
            table.chunks + again
        )
        covered = {key for rows in placed.values() for key in zip(*rows.to_pydict().values(), strict=True)}
        outside = [key for key, _ in table.held_twice if key not in covered]
        table.held_twice_left = len(outside[MAX_DUPLICATE_CHUNKS:])
        for key in outside[:MAX_DUPLICATE_CHUNKS]:
            chunk = Chunk(len(table.chunks) + len(again), _key_before(connection, table.metadata, key), key)
            again.append(chunk)
            table.why_again[chunk.index] = "a key the target holds twice"
    table.again = again
    table.report.chunks_planned = len(table.chunks) + len(again)


def _chunks(
    connection: pymysql.connections.Connection,
    metadata: TableMetadata,
    settings: VerifySettings,
    cursor: SampleCursor,
) -> tuple[list[Chunk], SampleCursor]:
    """This run's chunks of the table: the sample's next ones, every one, or those of a key range."""
    after = cursor.after if settings.mode == "sample" else None
    if after is not None and len(after) != len(metadata.key_columns):
        cursor = SampleCursor(None, cursor.passes)  # the key changed: start the rotation again
        after = None
    if settings.key_range:
        after = _key_before(connection, metadata, settings.key_from) if settings.key_from else None
    chunks = plan_chunks(
        connection, metadata, settings.chunk_size, after=after,
        max_chunks=settings.sample_chunks if settings.mode == "sample" else None, until=settings.key_to,
    )  # fmt: skip
    return chunks, cursor


def _key_before(
    connection: pymysql.connections.Connection, metadata: TableMetadata, key_from: tuple[Any, ...]
) -> tuple[Any, ...] | None:
    """The greatest key below ``key_from`` in MySQL's order (None: none): the exclusive lower bound of
    a re-load from ``key_from`` on. A lake key between it and ``key_from`` is then compared too: the
    source lacks it, so it is extra either way."""
    if len(key_from) != len(metadata.key_columns):
        raise VerifySettingsError(
            f"key_from {list(key_from)} must hold one value per key column of {metadata.ref} "
            f"({', '.join(metadata.key_columns)})"
        )
    table = metadata.ref.quoted
    key = ", ".join(f"{table}.{quote_identifier(name)}" for name in metadata.key_columns)
    columns = metadata.row_key_columns
    compared = ", ".join(
        f"({quote_identifier(c.name)} + 0)" if c.ordered_by_number else quote_identifier(c.name)
        for c in columns
    )
    values = [c.number_of(v) if c.ordered_by_number else v for c, v in zip(columns, key_from, strict=True)]
    order = ", ".join(f"{table}.{quote_identifier(name)} DESC" for name in metadata.key_columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {key} FROM {table} WHERE ({compared}) < ({', '.join(['%s'] * len(values))}) "
            f"ORDER BY {order} LIMIT 1",
            values,
        )
        row = cursor.fetchone()
    return tuple(row) if row is not None else None
