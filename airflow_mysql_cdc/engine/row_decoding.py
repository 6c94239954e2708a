"""Rows events to :class:`~.changes.RowChange` values, refusing images that are not whole.

Invariant: a row change leaves here only if its images hold *every* column, by name, with values
in the canonical form of :mod:`.mysql_types`. Three library behaviours would otherwise corrupt data
silently, each checked per event at the cost of one bytes comparison:

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

import gc
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

from airflow_mysql_cdc.engine.backpressure import ChangeBuffer, estimated_bytes
from airflow_mysql_cdc.engine.binlog_errors import UnsupportedServerSettingError
from airflow_mysql_cdc.engine.changes import Op, RowChange, TableShape
from airflow_mysql_cdc.engine.mysql_types import ColumnType, Normaliser, binlog_normaliser


class _TableDecoding:
    """Everything precomputed for one table id: shape, value fixers, key getter, full bitmap."""

    __slots__ = ("source", "tracked", "shape", "fixers", "set_columns", "key_of", "full_bitmap")

    def __init__(self, source: Any, tracked: bool) -> None:
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


def _key_getter(primary_key: tuple[str, ...]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
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
    def __init__(self, tracked: Collection[tuple[str, str]] | None) -> None:
        self.tracked = tracked
        self._tables: dict[int, _TableDecoding] = {}

    def _decoding(self, event: RowsEvent) -> _TableDecoding:
        source = event.table_map[event.table_id]
        decoding = self._tables.get(event.table_id)
        if decoding is None or decoding.source is not source:
            tracked = self.tracked is None or (source.schema, source.table) in self.tracked
            decoding = self._tables[event.table_id] = _TableDecoding(source, tracked)
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
        paused = gc.isenabled()
        if paused:
            gc.disable()
        try:
            changes = _row_changes(decoding, event)
        finally:
            if paused:
                gc.enable()
        images = 2 if isinstance(event, UpdateRowsEvent) else 1
        buffer.add(
            changes, estimated_bytes(event.event_size, len(changes), images * len(decoding.shape.columns))
        )


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


def _empty_sets(values: dict[str, Any], none_sources: dict[str, str], set_columns: tuple[str, ...]) -> None:
    """The library reports an empty SET as None; only its none_sources tell it from NULL."""
    for name in set_columns:
        if values[name] is None and none_sources.get(name) == NONE_SOURCE.EMPTY_SET:
            values[name] = ""


def _refuse_json_diffs(shape: TableShape, after: dict[str, Any], none_sources: dict[str, str]) -> None:
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
