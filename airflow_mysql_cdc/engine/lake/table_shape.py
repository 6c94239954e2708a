"""Whether a table's shape now still fits the shape its lake rows were written with: the one rule.

Invariant: every comparison of table shapes in the engine goes through :func:`compatibility`, which
returns a typed :class:`Compatibility` (what differs, what it means, what to do) instead of a bool.
Each caller decides which findings it can live with, and says why:

- the snapshot restart (:mod:`~airflow_mysql_cdc.engine.snapshot.table_definition`) accepts only
  :attr:`Compatibility.SAME`: every chunk must be read with the planned definition;
- the swap check and an unrecognised statement (:mod:`~airflow_mysql_cdc.engine.apply.schema_changes`)
  accept :data:`SAME_ROWS` (column order aside, the lake matches columns by name);
- rows from the binlog (:func:`fits_lake`) accept :data:`FITS_LAKE`: the lake may keep columns the
  source dropped (NULL from then on).

A shape knows what its source knows: a definition from ``information_schema`` has declarations and a
row key; the lake's columns and a binlog table map only have the type Delta stores. Declarations and
keys are compared only when both sides know them; the stored types always are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import pyarrow as pa

from airflow_mysql_cdc.engine.lake.delta_layout import source_columns_schema
from airflow_mysql_cdc.engine.mysql.definition import TableDefinition
from airflow_mysql_cdc.engine.mysql.types import ColumnType


class Compatibility(Enum):
    """One kind of difference between the recorded shape and the shape now, most serious first."""

    GONE = ("the table no longer exists", "remove it from the tables, or snapshot it again once it exists")
    COLUMNS_ADDED = ("columns added", "the table is snapshotted again: its existing rows' values are unknown")
    RETYPED = (
        "columns stored as another type",
        "the table is snapshotted again: the lake cannot hold the new values in the old column",
    )
    COLUMNS_REMOVED = ("columns removed", "the lake keeps them, NULL from here on, where rows allow it")
    KEY_CHANGED = ("row key changed", "the table is snapshotted again: rows are merged by their key")
    REDECLARED = (
        "columns declared otherwise (type, length, precision, nullability, character set or collation)",
        "the table is snapshotted again: the same stored type may now hold other values",
    )
    REORDERED = ("column order changed", "nothing to do where columns are matched by name")
    SAME = ("the same columns, declared alike, with the same row key", "nothing to do")

    def __init__(self, diagnosis: str, hint: str) -> None:
        self.diagnosis = diagnosis
        self.hint = hint


SAME_ROWS = frozenset({Compatibility.SAME, Compatibility.REORDERED})
"""Rows read now are rows the lake's rows were read as: a swap or an unknown statement streams on."""
FITS_LAKE = SAME_ROWS | {Compatibility.COLUMNS_REMOVED}
"""Rows of this shape can be written to the lake as they are (lake columns they lack get NULL)."""


@dataclass(frozen=True)
class Shape:
    """Columns in table order with the type Delta stores; declarations and key where known."""

    stored: Mapping[str, pa.DataType]
    declared: Mapping[str, tuple[object, ...]] | None = None
    key: tuple[str, ...] | None = None

    @classmethod
    def of_definition(cls, definition: TableDefinition) -> Shape:
        declared = {
            c.name: (c.column_type, c.nullable, c.character_set, c.collation) for c in definition.columns
        }
        return cls(_stored(definition.column_types), declared, definition.key)

    @classmethod
    def of_columns(cls, columns: Sequence[ColumnType]) -> Shape:
        """A binlog table map's columns (or any mapped columns): stored types only."""
        return cls(_stored(columns))

    @classmethod
    def of_lake(cls, fields: Mapping[str, pa.DataType]) -> Shape:
        """A Delta table's source columns (:func:`.evolution_writes.source_fields`)."""
        return cls(dict(fields))


@dataclass(frozen=True)
class Verdict:
    """Every kind of difference found (most serious first) and the columns each concerns."""

    findings: tuple[tuple[Compatibility, tuple[str, ...]], ...]

    @property
    def reason(self) -> Compatibility:
        """The most serious difference (:attr:`Compatibility.SAME` when there is none)."""
        return self.findings[0][0] if self.findings else Compatibility.SAME

    def within(self, accepted: frozenset[Compatibility]) -> bool:
        """Every difference found is one the caller accepts."""
        return all(kind in accepted for kind, _ in self.findings)

    def describe(self) -> str:
        """For a log line or an error: ``columns added: note; row key changed: id -> id, at``."""
        if not self.findings:
            return Compatibility.SAME.diagnosis
        return "; ".join(
            f"{kind.diagnosis}: {', '.join(names)}" if names else kind.diagnosis
            for kind, names in self.findings
        )


def compatibility(recorded: Shape, now: Shape | None) -> Verdict:
    """What differs from ``recorded`` (what the lake's rows were read with) to ``now`` (None: gone)."""
    if now is None:
        return Verdict(((Compatibility.GONE, ()),))
    before, after = recorded.stored, now.stored
    common = [name for name in after if name in before]
    findings: list[tuple[Compatibility, tuple[str, ...]]] = [
        (Compatibility.COLUMNS_ADDED, tuple(name for name in after if name not in before)),
        (Compatibility.RETYPED, tuple(name for name in common if before[name] != after[name])),
        (Compatibility.COLUMNS_REMOVED, tuple(name for name in before if name not in after)),
    ]
    if recorded.key is not None and now.key is not None and recorded.key != now.key:
        findings.append((Compatibility.KEY_CHANGED, (f"{', '.join(recorded.key)} -> {', '.join(now.key)}",)))
    if recorded.declared is not None and now.declared is not None:
        redeclared = tuple(n for n in common if recorded.declared.get(n) != now.declared.get(n))
        findings.append((Compatibility.REDECLARED, redeclared))
    if [name for name in before if name in after] != common:
        findings.append((Compatibility.REORDERED, ("",)))
    return Verdict(tuple((kind, tuple(n for n in names if n)) for kind, names in findings if names))


def fits_lake(columns: Sequence[ColumnType], lake_fields: Mapping[str, pa.DataType]) -> bool:
    """Rows with ``columns`` can be written to a lake table with ``lake_fields`` as they are."""
    return compatibility(Shape.of_lake(lake_fields), Shape.of_columns(columns)).within(FITS_LAKE)


def _stored(columns: Sequence[ColumnType]) -> dict[str, pa.DataType]:
    return {field.name: field.type for field in source_columns_schema(tuple(columns))}
