"""Rows events to :class:`~airflow_mysql_cdc.engine.binlog.changes.RowChange` values, whole images only.

Invariant: a row change leaves here only if its images hold *every* column, by name, with values
in the canonical form of :mod:`~airflow_mysql_cdc.engine.mysql.normalise`. Three library behaviours
would otherwise corrupt data silently, each checked per event at the cost of one bytes comparison:

- ``binlog_row_image`` MINIMAL or NOBLOB (settable per session) leaves columns out of the image;
  the library fills them with None, indistinguishable from NULL. The columns-present bitmap must
  be all ones. Guarded by ``test_minimal_row_image_in_a_session_raises``.
- ``binlog_row_metadata=MINIMAL`` removes column names from table maps; the library then names
  columns ``UNKNOWN_COLn``, reads unsigned integers as signed and ENUM/SET as None. Guarded by
  ``test_server_without_full_row_metadata_is_refused``.
- ``PartialUpdateRowsEvent`` (``binlog_row_value_options=PARTIAL_JSON``) is a subclass of
  ``UpdateRowsEvent`` and is handled as an update when its after image is whole; if it carries
  JSON diffs instead of documents the read stops. Guarded by
  ``test_partial_json_updates_are_never_dropped``.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Collection
from operator import itemgetter
from typing import Any

from pymysqlreplication.constants import NONE_SOURCE
from pymysqlreplication.json_binary import JsonDiff
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    PartialUpdateRowsEvent,
    RowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

from airflow_mysql_cdc.engine.binlog.backpressure import ChangeBuffer, estimated_bytes
from airflow_mysql_cdc.engine.binlog.changes import Op, RowChange, TableShape
from airflow_mysql_cdc.engine.binlog.decoding.compiled import (
    ImageReader,
    UncompilableColumn,
    compile_image_reader,
)
from airflow_mysql_cdc.engine.binlog.errors import UnsupportedServerSettingError
from airflow_mysql_cdc.engine.binlog.internals import unread_row_images
from airflow_mysql_cdc.engine.mysql.normalise import Normaliser, binlog_normaliser
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.runtime.gc_pause import CollectorPaused
from airflow_mysql_cdc.engine.values.json_values import RowValues

log = logging.getLogger(__name__)


class _TableDecoding:
    """Everything precomputed for one table id: shape, value fixers, key getter, full bitmap."""

    __slots__ = (
        "source", "tracked", "shape", "fixers", "set_columns", "key_of", "full_bitmap", "read_image"
    )  # fmt: skip

    def __init__(self, source: Any, tracked: bool, compiled: bool) -> None:
        self.source = source
        self.tracked = tracked
        if not tracked:
            return
        if not source.column_name_flag:
            raise_missing_names(source.schema, source.table)
        columns = tuple(ColumnType.from_binlog_column(column) for column in source.columns)
        primary_key = tuple(column.name for column in source.columns if column.is_primary)
        self.shape = TableShape(source.schema, source.table, columns, primary_key)
        fixers: list[tuple[str, Normaliser]] = []
        for column in columns:
            normaliser = binlog_normaliser(column)
            if normaliser is not None:
                fixers.append((column.name, normaliser))
        self.fixers = tuple(fixers)
        self.set_columns = tuple(column.name for column in columns if column.kind == "set")
        self.key_of = _key_getter(primary_key)
        self.full_bitmap = (1 << len(columns)) - 1  # padding bits after the last column may be set
        self.read_image: ImageReader | None = None
        if compiled:
            try:
                self.read_image = compile_image_reader(source.columns, columns, primary_key)
            except UncompilableColumn as reason:
                log.info("rows of %s are decoded by mysql-replication: %s", self.shape.qualified_name, reason)


def _key_getter(primary_key: tuple[str, ...]) -> Callable[[RowValues], tuple[Any, ...]]:
    if not primary_key:
        return lambda values: ()
    if len(primary_key) == 1:
        (name,) = primary_key
        return lambda values: (values[name],)
    return itemgetter(*primary_key)


def raise_missing_names(schema: str, table: str) -> None:
    raise UnsupportedServerSettingError(
        "binlog_row_metadata",
        f"not FULL (the table map of {schema}.{table} carries no column names)",
        "FULL",
        "the library invents UNKNOWN_COLn names, reads unsigned integers as signed and ENUM/SET as None",
    )


class RowDecoder:
    """Rows events of the tracked tables to changes; ``compiled=False`` decodes only with the library."""

    def __init__(self, tracked: Collection[tuple[str, str]] | None, *, compiled: bool = True) -> None:
        self.tracked = tracked
        self.compiled = compiled
        self.library_events = 0  # rows events of tracked tables the library decoded (fallbacks)
        self._tables: dict[int, _TableDecoding] = {}

    def _decoding(self, event: RowsEvent) -> _TableDecoding:
        source = event.table_map[event.table_id]
        decoding = self._tables.get(event.table_id)
        if decoding is None or decoding.source is not source:
            tracked = self.tracked is None or (source.schema, source.table) in self.tracked
            decoding = self._tables[event.table_id] = _TableDecoding(source, tracked, self.compiled)
        return decoding

    def check_table_map(self, event: TableMapEvent) -> None:
        """Refuse unnamed columns as soon as a tracked table's map arrives."""
        table = event.get_table()
        if (
            self.tracked is None or (table.schema, table.table) in self.tracked
        ) and not table.column_name_flag:
            raise_missing_names(table.schema, table.table)

    def decode(self, event: RowsEvent, buffer: ChangeBuffer) -> None:
        decoding = self._decoding(event)
        if not decoding.tracked:
            return
        full = decoding.full_bitmap
        if int.from_bytes(event.columns_present_bitmap, "little") & full != full or (
            isinstance(event, UpdateRowsEvent)
            and int.from_bytes(event.columns_present_bitmap2, "little") & full != full
        ):
            raise UnsupportedServerSettingError(
                "binlog_row_image",
                f"not FULL in the session that changed {decoding.shape.qualified_name}",
                "FULL",
                "row images miss columns, which the library reports as NULL",
            )
        # The cyclic collector is paused while one rows event (at most binlog_row_event_max_size,
        # 8 KiB by default) is decoded: decoding allocates tens of thousands of objects that must
        # all stay alive until the commit, and collections triggered in the middle only rescan
        # them; pausing saved about 3% of throughput (scripts/bench_reader.py). Nothing is leaked:
        # any garbage made meanwhile is collected by the first collection after.
        with CollectorPaused():
            changes = None
            if decoding.read_image is not None and type(event) in _COMPILED_EVENTS:
                changes = _compiled_changes(decoding, event)
            if changes is None:
                self.library_events += 1
                changes = _row_changes(decoding, event)
        images = 2 if isinstance(event, UpdateRowsEvent) else 1
        buffer.add(
            changes, estimated_bytes(event.event_size, len(changes), images * len(decoding.shape.columns))
        )


_COMPILED_EVENTS = (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)  # exact classes: not partial JSON


def _compiled_changes(decoding: _TableDecoding, event: RowsEvent) -> list[RowChange] | None:
    """The event's changes read by the table's compiled reader, or None to let the library read them.

    The reader never moves the packet's read position, so the library can always decode the same
    event again: after an error (the library then raises its own, or decodes what this could not)
    and when the images do not end exactly at the event's end.
    """
    located = unread_row_images(event)
    if located is None:
        return None
    data, position, end = located
    read_image = decoding.read_image
    assert read_image is not None
    shape = decoding.shape
    changes: list[RowChange] = []
    append = changes.append
    event_class = type(event)
    try:
        if event_class is UpdateRowsEvent:
            while position < end:
                before, _, position = read_image(data, position)
                after, key, position = read_image(data, position)
                append(RowChange(shape, Op.UPDATE, before, after, key))
        elif event_class is WriteRowsEvent:
            while position < end:
                values, key, position = read_image(data, position)
                append(RowChange(shape, Op.INSERT, None, values, key))
        else:
            while position < end:
                values, key, position = read_image(data, position)
                append(RowChange(shape, Op.DELETE, values, None, key))
    except (ValueError, IndexError, struct.error) as error:  # UnicodeDecodeError is a ValueError
        log.debug("compiled reader of %s: %s; the library decodes the event", shape.qualified_name, error)
        return None
    if position != end:
        log.warning(
            "compiled reader of %s ended at byte %d of a rows event ending at %d; the library decodes it",
            shape.qualified_name,
            position,
            end,
        )
        return None
    return changes


def _row_changes(decoding: _TableDecoding, event: RowsEvent) -> list[RowChange]:
    shape = decoding.shape
    fixers = decoding.fixers
    set_columns = decoding.set_columns
    key_of = decoding.key_of
    changes: list[RowChange] = []
    append = changes.append
    if isinstance(event, UpdateRowsEvent):
        partial = isinstance(event, PartialUpdateRowsEvent)
        for row in event.rows:
            before = row["before_values"]
            after = row["after_values"]
            if partial:
                _refuse_json_diffs(shape, after, row["after_none_sources"])
            for name, fixer in fixers:  # inlined: this loop runs for every row
                old_value = before[name]
                new_value = after[name]
                if old_value is not None:
                    before[name] = fixer(old_value)
                    if new_value == old_value:  # unchanged column: normalise once (JSON is costly)
                        after[name] = before[name]
                        continue
                if new_value is not None:
                    after[name] = fixer(new_value)
            if set_columns:
                _empty_sets(before, row["before_none_sources"], set_columns)
                _empty_sets(after, row["after_none_sources"], set_columns)
            append(RowChange(shape, Op.UPDATE, before, after, key_of(after)))
    elif isinstance(event, (WriteRowsEvent, DeleteRowsEvent)):
        inserting = isinstance(event, WriteRowsEvent)
        for row in event.rows:
            values = row["values"]
            for name, fixer in fixers:
                value = values[name]
                if value is not None:
                    values[name] = fixer(value)
            if set_columns:
                _empty_sets(values, row["none_sources"], set_columns)
            if inserting:
                append(RowChange(shape, Op.INSERT, None, values, key_of(values)))
            else:
                append(RowChange(shape, Op.DELETE, values, None, key_of(values)))
    else:  # a rows event class this reader does not know must never pass silently
        raise TypeError(f"unknown rows event class {type(event).__name__}")
    return changes


def _empty_sets(values: RowValues, none_sources: dict[str, str], set_columns: tuple[str, ...]) -> None:
    """The library reports an empty SET as None; only its none_sources tell it from NULL."""
    for name in set_columns:
        if values[name] is None and none_sources.get(name) == NONE_SOURCE.EMPTY_SET:
            values[name] = ""


def _refuse_json_diffs(shape: TableShape, after: RowValues, none_sources: dict[str, str]) -> None:
    for name, value in after.items():
        # The library returns one JsonDiff (and reads only the first diff of a column).
        is_diff = isinstance(value, JsonDiff) or (
            isinstance(value, list) and any(isinstance(item, JsonDiff) for item in value)
        )
        if is_diff or none_sources.get(name) == NONE_SOURCE.JSON_PARTIAL_UPDATE:
            raise UnsupportedServerSettingError(
                "binlog_row_value_options",
                f"PARTIAL_JSON (column {shape.qualified_name}.{name} arrived as a JSON diff)",
                "'' (empty)",
                "the after image holds only the changed paths of the JSON document",
            )
