"""One rule for a table's shape: what the snapshot records, what a later swap and the binlog's rows
are compared with, each caller accepting only the differences it can live with."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from airflow_mysql_cdc.engine.lake.table_shape import (
    FITS_LAKE,
    SAME_ROWS,
    Compatibility,
    Shape,
    compatibility,
    fits_lake,
)
from airflow_mysql_cdc.engine.mysql.definition import TableDefinition
from airflow_mysql_cdc.engine.mysql.schema import Column, TableMetadata, TableRef
from airflow_mysql_cdc.engine.mysql.types import ColumnType


def _definition(*columns: Column, key: tuple[str, ...] = ("id",)) -> TableDefinition:
    ref = TableRef("shop", "orders")
    return TableDefinition.of(TableMetadata(ref, "InnoDB", columns, key, "primary", "PRIMARY"))


def _verdict(before: TableDefinition, after: TableDefinition | None):
    return compatibility(Shape.of_definition(before), Shape.of_definition(after) if after else None)


ID = Column("id", "bigint", "bigint unsigned", False)
NOTE = Column("note", "varchar", "varchar(20)", True, "utf8mb4", "utf8mb4_0900_ai_ci")
AT = Column("at", "datetime", "datetime(6)", True, datetime_precision=6)
PRICE = Column("price", "decimal", "decimal(12,3)", False, numeric_precision=12, numeric_scale=3)
FLAGS = Column("flags", "bit", "bit(5)", True, numeric_precision=5)
DIGEST = Column("digest", "binary", "binary(16)", True, octet_length=16)
KIND = Column("kind", "enum", "enum('A','b'',c')", False, "utf8mb4", "utf8mb4_bin")


def test_a_recorded_definition_reads_back_as_the_same_columns() -> None:
    definition = _definition(ID, NOTE, AT, PRICE, FLAGS, DIGEST, KIND)
    back = TableDefinition.from_json(json.loads(json.dumps(definition.to_json())))
    assert _verdict(definition, back).reason is Compatibility.SAME
    assert back.column_types == definition.column_types and back.to_json() == definition.to_json()


def test_a_record_that_does_not_read_back_exactly_is_refused() -> None:
    record = _definition(ID, NOTE).to_json()
    record["declared"][1][1] = "int"  # declared int, mapped as text
    with pytest.raises(ValueError, match="'note' \\(int\\) does not read back"):
        TableDefinition.from_json(record)


def test_declarations_that_keep_the_delta_type_still_differ() -> None:
    """Truncated strings, rounded times and defaults for NULL: same Delta type, other values."""
    before = _definition(ID, NOTE, AT)
    narrowed = Column("note", "varchar", "varchar(5)", True, "utf8mb4", "utf8mb4_0900_ai_ci")
    rounded = Column("at", "datetime", "datetime", True)
    not_null = Column("note", "varchar", "varchar(20)", False, "utf8mb4", "utf8mb4_0900_ai_ci")
    latin = Column("note", "varchar", "varchar(20)", True, "latin1", "latin1_swedish_ci")
    for changed, column in ((narrowed, "note"), (rounded, "at"), (not_null, "note"), (latin, "note")):
        verdict = _verdict(before, _definition(*(changed if c.name == column else c for c in (ID, NOTE, AT))))
        assert verdict.reason is Compatibility.REDECLARED and not verdict.within(SAME_ROWS)
        assert verdict.describe() == f"{Compatibility.REDECLARED.diagnosis}: {column}"
    rekeyed = _verdict(before, _definition(ID, NOTE, AT, key=("id", "note")))
    assert (
        rekeyed.reason is Compatibility.KEY_CHANGED
        and rekeyed.describe() == "row key changed: id -> id, note"
    )


def test_column_order_matters_to_a_snapshot_but_not_to_a_swap() -> None:
    before = _definition(ID, NOTE, AT)
    reordered = _verdict(before, _definition(AT, ID, NOTE))
    assert reordered.reason is Compatibility.REORDERED  # a snapshot restarts on it (only SAME passes)
    assert reordered.within(SAME_ROWS)  # the lake matches columns by name
    assert _verdict(before.without({"note"}), _definition(ID, AT)).reason is Compatibility.SAME


def test_every_difference_is_named_most_serious_first() -> None:
    before = _definition(ID, NOTE, AT)
    retyped = Column("note", "int", "int", True)
    verdict = _verdict(before, _definition(ID, retyped, PRICE))
    assert [kind for kind, _ in verdict.findings] == [
        Compatibility.COLUMNS_ADDED,
        Compatibility.RETYPED,
        Compatibility.COLUMNS_REMOVED,
        Compatibility.REDECLARED,
    ]
    assert verdict.describe().startswith("columns added: price; columns stored as another type: note;")
    gone = _verdict(before, None)
    assert gone.reason is Compatibility.GONE and "snapshot it again" in gone.reason.hint


def test_binlog_rows_fit_a_lake_that_kept_dropped_columns_but_not_new_or_retyped_ones() -> None:
    lake = {"id": pa.int64(), "note": pa.string(), "gone": pa.string()}
    assert fits_lake((ColumnType("id", "int", bits=64), ColumnType("note", "text")), lake)
    assert not fits_lake((ColumnType("id", "int", bits=64), ColumnType("extra", "text")), lake)
    assert not fits_lake((ColumnType("id", "int", bits=64), ColumnType("note", "int", bits=32)), lake)
    assert Compatibility.COLUMNS_REMOVED in FITS_LAKE and Compatibility.REDECLARED not in FITS_LAKE
