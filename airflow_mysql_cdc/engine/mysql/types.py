"""MySQL column types to Arrow types: one mapping for the binlog and the snapshot path.

Invariant: a column has one :class:`ColumnType` whichever path describes it: from the binlog's
table map (:meth:`ColumnType.from_binlog_column`, ``binlog_row_metadata=FULL``) or from the one
column model read from ``information_schema`` (:meth:`ColumnType.from_column`). Its JSON form is
stored with change tables and snapshot commits, so it must read back exactly (``from_json``
validates). What the *values* of each type look like on both paths, and how they are made equal,
is :mod:`.normalise`. Guarded by ``test_every_type_maps_to_identical_arrow_values_from_select_and_binlog``
(``assert binlog_columns == select_columns``).
"""

from __future__ import annotations

import decimal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pymysqlreplication.constants import FIELD_TYPE

from airflow_mysql_cdc.engine.errors import ConfigurationError
from airflow_mysql_cdc.engine.mysql.schema import Column, TableRef, read_columns


class UnsupportedColumnTypeError(ConfigurationError, TypeError):
    """A column type the mapping does not know; the message names the column and type."""


@dataclass(frozen=True)
class ColumnType:
    """What the mapping needs to know about one column, from either source.

    ``kind`` is one of: int, uint, decimal, float, double, date, datetime, timestamp, time, year,
    text, binary, json, enum, set, bit, geometry.
    """

    name: str
    kind: str
    bits: int = 0  # integer width (8/16/24/32/64) or BIT(n) width
    precision: int = 0  # DECIMAL precision
    scale: int = 0  # DECIMAL scale
    fsp: int = 0  # fractional seconds of TIME/DATETIME/TIMESTAMP
    fixed_length: int = 0  # BINARY(n): bytes the value is padded to; 0 if not fixed
    members: tuple[str, ...] = ()  # ENUM/SET members in definition order

    def arrow_type(self) -> pa.DataType:
        return _arrow_type(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "bits": self.bits,
            "precision": self.precision,
            "scale": self.scale,
            "fsp": self.fsp,
            "fixed_length": self.fixed_length,
            "members": list(self.members),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ColumnType:
        """Validated: an unknown kind or a malformed field raises ``ValueError`` naming it."""
        if not isinstance(data, Mapping) or not isinstance(data.get("name"), str):
            raise ValueError(f"a column type needs a string 'name', got {data!r}")
        if data.get("kind") not in _KINDS:
            raise ValueError(f"column {data['name']!r}: unknown kind {data.get('kind')!r}")
        numbers = {}
        for field_name in ("bits", "precision", "scale", "fsp", "fixed_length"):
            value = data.get(field_name, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"column {data['name']!r}: {field_name} must be a non-negative int, got {value!r}"
                )
            numbers[field_name] = value
        members = data.get("members", [])
        if not isinstance(members, list) or not all(isinstance(member, str) for member in members):
            raise ValueError(f"column {data['name']!r}: members must be a list of strings")
        return cls(data["name"], data["kind"], members=tuple(members), **numbers)

    # --- constructors -------------------------------------------------------------------------

    @classmethod
    def from_binlog_column(cls, column: Any) -> ColumnType:
        """From a ``pymysqlreplication.column.Column`` decoded with binlog_row_metadata=FULL."""
        field_type = column.type
        name = column.name
        unsigned = bool(getattr(column, "unsigned", False))
        if field_type in _BINLOG_INTEGER_BITS:
            return cls(name, "uint" if unsigned else "int", bits=_BINLOG_INTEGER_BITS[field_type])
        if field_type == FIELD_TYPE.NEWDECIMAL:
            return cls(name, "decimal", precision=column.precision, scale=column.decimals)
        if field_type in _BINLOG_SIMPLE_KINDS:
            return cls(name, _BINLOG_SIMPLE_KINDS[field_type], fsp=getattr(column, "fsp", 0) or 0)
        if field_type in (FIELD_TYPE.VARCHAR, FIELD_TYPE.VAR_STRING, FIELD_TYPE.STRING, FIELD_TYPE.BLOB):
            if column.character_set_name == "binary":
                fixed = column.max_length if field_type == FIELD_TYPE.STRING else 0
                return cls(name, "binary", fixed_length=fixed)
            return cls(name, "text")
        if field_type == FIELD_TYPE.ENUM:
            return cls(name, "enum", members=tuple(column.enum_values[1:] if column.enum_values else ()))
        if field_type == FIELD_TYPE.SET:
            return cls(name, "set", members=tuple(column.set_values or ()))
        if field_type == FIELD_TYPE.BIT:
            return cls(name, "bit", bits=column.bits)
        raise UnsupportedColumnTypeError(f"column {name!r}: binlog field type {field_type} is not mapped")

    @classmethod
    def from_column(cls, column: Column) -> ColumnType:
        """From the one column model read from ``information_schema`` (:class:`.schema.Column`)."""
        name, data_type = column.name, column.data_type
        if data_type in _SCHEMA_INTEGER_BITS:
            return cls(name, "uint" if column.unsigned else "int", bits=_SCHEMA_INTEGER_BITS[data_type])
        if data_type == "decimal":
            precision, scale = column.numeric_precision or 0, column.numeric_scale or 0
            return cls(name, "decimal", precision=precision, scale=scale)
        if data_type in _SCHEMA_SIMPLE_KINDS:
            return cls(name, _SCHEMA_SIMPLE_KINDS[data_type], fsp=column.datetime_precision or 0)
        if data_type in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext"):
            return cls(name, "text")
        if data_type in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"):
            fixed = (column.octet_length or 0) if data_type == "binary" else 0
            return cls(name, "binary", fixed_length=fixed)
        if data_type in ("enum", "set"):
            return cls(name, data_type, members=column.members)
        if data_type == "bit":
            return cls(name, "bit", bits=column.numeric_precision or 0)
        if data_type in _GEOMETRY_TYPES:
            return cls(name, "geometry")
        raise UnsupportedColumnTypeError(f"column {name!r}: MySQL type {column.column_type!r} is not mapped")


def read_table_column_types(cursor: Any, schema: str, table: str) -> tuple[ColumnType, ...]:
    """Column types of a table as the snapshot path sees them (the one ``information_schema`` reader)."""
    return tuple(ColumnType.from_column(column) for column in read_columns(cursor, TableRef(schema, table)))


_KINDS = frozenset(
    ("int", "uint", "decimal", "float", "double", "date", "datetime", "timestamp", "time", "year")
    + ("text", "binary", "json", "enum", "set", "bit", "geometry")
)
_BINLOG_INTEGER_BITS = {
    FIELD_TYPE.TINY: 8,
    FIELD_TYPE.SHORT: 16,
    FIELD_TYPE.INT24: 24,
    FIELD_TYPE.LONG: 32,
    FIELD_TYPE.LONGLONG: 64,
}
_BINLOG_SIMPLE_KINDS = {
    FIELD_TYPE.FLOAT: "float",
    FIELD_TYPE.DOUBLE: "double",
    FIELD_TYPE.DATE: "date",
    FIELD_TYPE.DATETIME: "datetime",
    FIELD_TYPE.DATETIME2: "datetime",
    FIELD_TYPE.TIMESTAMP: "timestamp",
    FIELD_TYPE.TIMESTAMP2: "timestamp",
    FIELD_TYPE.TIME: "time",
    FIELD_TYPE.TIME2: "time",
    FIELD_TYPE.YEAR: "year",
    FIELD_TYPE.JSON: "json",
    FIELD_TYPE.GEOMETRY: "geometry",
}
_SCHEMA_INTEGER_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
_SCHEMA_SIMPLE_KINDS = {
    "float": "float",
    "double": "double",
    "date": "date",
    "datetime": "datetime",
    "timestamp": "timestamp",
    "time": "time",
    "year": "year",
    "json": "json",
}
_GEOMETRY_TYPES = frozenset(
    ("geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon")
    + ("geometrycollection", "geomcollection")
)


def _arrow_type(column: ColumnType) -> pa.DataType:
    kind = column.kind
    if kind == "int":
        return {8: pa.int8(), 16: pa.int16(), 24: pa.int32(), 32: pa.int32(), 64: pa.int64()}[column.bits]
    if kind == "uint":
        if column.bits == 64:
            return pa.decimal128(20, 0)
        return {8: pa.uint8(), 16: pa.uint16(), 24: pa.uint32(), 32: pa.uint32()}[column.bits]
    simple = {
        "float": pa.float32(),
        "double": pa.float64(),
        "date": pa.date32(),
        "datetime": pa.timestamp("us"),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "time": pa.duration("us"),
        "year": pa.int16(),
        "text": pa.string(),
        "binary": pa.binary(),
        "json": pa.string(),
        "enum": pa.string(),
        "set": pa.string(),
        "bit": pa.uint64(),
        "geometry": pa.binary(),
    }
    if kind in simple:
        return simple[kind]
    if kind == "decimal":
        # MySQL allows 65 digits; Arrow's 128-bit decimal holds 38 (the lake stores wider ones as text).
        if column.precision > 38:
            return pa.decimal256(column.precision, column.scale)
        return pa.decimal128(column.precision, column.scale)
    raise UnsupportedColumnTypeError(f"column {column.name!r}: no Arrow type for kind {kind!r}")


def to_arrow_array(column: ColumnType, values: Iterable[Any]) -> pa.Array:
    """Canonical values of one column as an Arrow array of :meth:`ColumnType.arrow_type`."""
    arrow_type = column.arrow_type()
    if column.kind == "uint" and column.bits == 64:
        values = [None if value is None else decimal.Decimal(value) for value in values]
    return pa.array(values if isinstance(values, list) else list(values), type=arrow_type)


def to_arrow_table(columns: Sequence[ColumnType], rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Canonical rows (dicts by column name) as an Arrow table with one column per ``columns``."""
    return pa.table(
        {column.name: to_arrow_array(column, (row[column.name] for row in rows)) for column in columns}
    )
