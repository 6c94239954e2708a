"""A table's definition as MySQL declares it: the columns (the one :class:`.schema.Column` model) and
the row key, read once, recorded with a snapshot and compared later.

Invariant: a definition is made of :class:`.schema.Column` values, the same model every other path
reads, so what a snapshot records is exactly what ``information_schema`` said. Its JSON form
(:meth:`TableDefinition.to_json`) is the one snapshots have recorded since definitions were first
kept (each column's type mapping plus its declaration: ``COLUMN_TYPE``, nullability, character set,
collation) and reads back to columns whose type mapping is checked against the recorded one, so an
old record is never misread silently. Whether two definitions are alike is decided in one place,
:func:`~airflow_mysql_cdc.engine.lake.table_shape.compatibility`; this class has no equality of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from airflow_mysql_cdc.engine.mysql.schema import Column, TableMetadata, TableRef, read_table_metadata
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.json_values import JsonObject

_DATA_TYPE = re.compile(r"[a-z]+")


@dataclass(frozen=True, eq=False)
class TableDefinition:
    """The columns in table order and the row key (compare with ``compatibility``, never ``==``)."""

    columns: tuple[Column, ...]
    key: tuple[str, ...]

    @classmethod
    def of(cls, metadata: TableMetadata) -> TableDefinition:
        return cls(tuple(metadata.columns), tuple(metadata.key_columns))

    @property
    def column_types(self) -> tuple[ColumnType, ...]:
        """How each column maps to Arrow and Delta (:class:`.types.ColumnType`)."""
        return tuple(ColumnType.from_column(column) for column in self.columns)

    def without(self, names: set[str]) -> TableDefinition:
        """This definition less the columns ``names`` (dropped since it was read)."""
        return TableDefinition(tuple(c for c in self.columns if c.name not in names), self.key)

    def to_json(self) -> JsonObject:
        return {
            "columns": [column.to_json() for column in self.column_types],
            "key": list(self.key),
            "declared": [
                [c.name, c.column_type, c.nullable, c.character_set, c.collation] for c in self.columns
            ],
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> TableDefinition:
        """The definition a snapshot recorded; ``ValueError`` if the record does not read back exactly."""
        types = [ColumnType.from_json(column) for column in data["columns"]]
        declared = data.get("declared") or []
        if len(declared) != len(types):
            raise ValueError(f"a recorded table definition declares {len(declared)} of {len(types)} columns")
        columns = tuple(
            _column(mapped, *declaration) for mapped, declaration in zip(types, declared, strict=True)
        )
        for column, mapped in zip(columns, types, strict=True):
            if ColumnType.from_column(column) != mapped:
                raise ValueError(f"recorded column {column.name!r} ({column.column_type}) does not read back")
        return cls(columns, tuple(data["key"]))


def _column(
    mapped: ColumnType,
    name: str,
    column_type: str,
    nullable: bool,
    character_set: str | None,
    collation: str | None,
) -> Column:
    """The :class:`Column` a recorded declaration describes: ``DATA_TYPE`` is the leading word of
    ``COLUMN_TYPE`` (``int unsigned``, ``varchar(20)``), the numbers come from the type mapping."""
    match = _DATA_TYPE.match(column_type.lower())
    if match is None or mapped.name != name:
        raise ValueError(f"recorded column {name!r}: declaration {column_type!r} does not name a type")
    data_type = match.group(0)
    return Column(
        name,
        data_type,
        column_type,
        nullable,
        character_set,
        collation,
        numeric_precision=mapped.bits if data_type == "bit" else mapped.precision or None,
        numeric_scale=mapped.scale if data_type == "decimal" else None,
        datetime_precision=mapped.fsp or None,
        octet_length=mapped.fixed_length or None,
    )


def read_definition(endpoint: MySqlEndpoint, ref: TableRef) -> TableDefinition | None:
    """The table's definition now (None: it does not exist)."""
    with endpoint.connect() as connection, connection.cursor() as cursor:
        metadata = read_table_metadata(cursor, ref)
    return TableDefinition.of(metadata) if metadata is not None else None
