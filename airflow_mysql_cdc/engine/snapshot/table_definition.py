"""A table's definition during its snapshot: a DDL landing mid-snapshot restarts the snapshot cleanly.

Invariant: every chunk a snapshot commits was read with the definition (columns, types, row key) it
was planned with. MySQL's metadata lock gives one window's SELECT one table definition, so the
definition is read again *after* each window: if it is still the planned one, the window read it;
if it changed, the window is not committed and the snapshot restarts from scratch with the new
definition (a new plan and snapshot id, the table emptied: :mod:`.lake_commits`), so no chunk of the
old definition survives. A snapshot resumed in a later attempt is checked the same way against the
columns its committed chunks have. Guarded by tests/integration/test_snapshot_schema_changes.py.

The definition compared is the one MySQL declares (``COLUMN_TYPE``, nullability, character set and
collation of every column, and the row key), not only the types the lake stores: a ``VARCHAR``
narrowed, a ``DATETIME(6)`` made ``DATETIME`` or a column made ``NOT NULL`` change existing values
while Delta's type stays the same. The snapshot records it in its first commit
(:mod:`.lake_commits`), so a later swap of the table (a migration tool's cut-over) is compared with
exactly what the lake was read with (:mod:`~airflow_mysql_cdc.engine.apply.schema_changes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.mysql.schema import Column, TableMetadata, TableRef, read_table_metadata
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint


@dataclass(frozen=True)
class DeclaredColumn:
    """A column as MySQL declares it: what decides its values, beyond the type Delta stores."""

    name: str
    column_type: str
    nullable: bool
    character_set: str | None
    collation: str | None

    @classmethod
    def of(cls, column: Column) -> DeclaredColumn:
        return cls(column.name, column.column_type, column.nullable, column.character_set, column.collation)

    def to_json(self) -> list[Any]:
        return [self.name, self.column_type, self.nullable, self.character_set, self.collation]


@dataclass(frozen=True)
class TableDefinition:
    columns: tuple[ColumnType, ...]
    key: tuple[str, ...]
    declared: tuple[DeclaredColumn, ...] = ()

    @classmethod
    def of(cls, metadata: TableMetadata) -> TableDefinition:
        return cls(
            tuple(ColumnType.from_column(c) for c in metadata.columns),
            tuple(metadata.key_columns),
            tuple(DeclaredColumn.of(c) for c in metadata.columns),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": [column.to_json() for column in self.columns],
            "key": list(self.key),
            "declared": [column.to_json() for column in self.declared],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableDefinition:
        return cls(
            tuple(ColumnType.from_json(column) for column in data["columns"]),
            tuple(data["key"]),
            tuple(DeclaredColumn(*column) for column in data["declared"]),
        )

    def without(self, names: set[str]) -> TableDefinition:
        """This definition less the columns ``names`` (dropped since it was read)."""
        return TableDefinition(
            tuple(c for c in self.columns if c.name not in names),
            self.key,
            tuple(c for c in self.declared if c.name not in names),
        )

    def same_as(self, other: TableDefinition) -> bool:
        """The same columns, declared alike, and the same row key; the column order does not matter
        (the lake matches columns by name)."""
        return (
            self.key == other.key
            and set(self.columns) == set(other.columns)
            and set(self.declared) == set(other.declared)
        )

    def changes_to(self, other: TableDefinition) -> str:
        """What changed from this definition to ``other``, for the log."""
        mine = {c.name: c for c in self.columns}
        theirs = {c.name: c for c in other.columns}
        parts = []
        if added := [n for n in theirs if n not in mine]:
            parts.append(f"columns added: {', '.join(added)}")
        if removed := [n for n in mine if n not in theirs]:
            parts.append(f"columns removed: {', '.join(removed)}")
        declared = {c.name: c for c in self.declared}
        redeclared = {c.name: c for c in other.declared}
        if retyped := [
            n for n in mine if n in theirs and (mine[n] != theirs[n] or declared.get(n) != redeclared.get(n))
        ]:
            parts.append(f"columns changed: {', '.join(retyped)}")
        if self.key != other.key:
            parts.append(f"row key {', '.join(self.key)} -> {', '.join(other.key)}")
        return "; ".join(parts) or "column order changed"


class DefinitionChanged(CdcError):
    """The table's definition changed during its snapshot (the runner restarts it)."""

    def __init__(self, ref: TableRef, before: TableDefinition, after: TableDefinition) -> None:
        self.after = after
        super().__init__(f"{ref} changed during its snapshot ({before.changes_to(after)})")


class SnapshotTableDroppedError(CdcError):
    """The table disappeared (dropped or renamed) while it was being snapshotted."""


class DefinitionUnstableError(CdcError):
    """The table's definition kept changing: every restart of its snapshot met another DDL."""


def read_definition(endpoint: MySqlEndpoint, ref: TableRef) -> TableDefinition | None:
    with endpoint.connect() as connection, connection.cursor() as cursor:
        metadata = read_table_metadata(cursor, ref)
    return TableDefinition.of(metadata) if metadata is not None else None


def check_unchanged(endpoint: MySqlEndpoint, ref: TableRef, planned: TableDefinition) -> None:
    """Raise :class:`DefinitionChanged` (or the table's disappearance) unless ``planned`` holds now."""
    now = read_definition(endpoint, ref)
    if now is None:
        raise SnapshotTableDroppedError(
            f"{ref} no longer exists: it was dropped or renamed while it was being snapshotted. Nothing "
            "of it was streamed yet. Remove it from the table list, or snapshot it again once it exists."
        )
    if now != planned:
        raise DefinitionChanged(ref, planned, now)
