"""A table's declared definition: what the snapshot records and a later swap is compared with."""

from __future__ import annotations

import json

from airflow_mysql_cdc.engine.mysql.schema import Column, TableMetadata, TableRef
from airflow_mysql_cdc.engine.snapshot.table_definition import TableDefinition


def _definition(*columns: Column, key: tuple[str, ...] = ("id",)) -> TableDefinition:
    ref = TableRef("shop", "orders")
    return TableDefinition.of(TableMetadata(ref, "InnoDB", columns, key, "primary", "PRIMARY"))


ID = Column("id", "int", "int", False)
NOTE = Column("note", "varchar", "varchar(20)", True, "utf8mb4", "utf8mb4_0900_ai_ci")
AT = Column("at", "datetime", "datetime(6)", True, datetime_precision=6)


def test_the_definition_survives_its_json_record() -> None:
    definition = _definition(ID, NOTE, AT)
    assert TableDefinition.from_json(json.loads(json.dumps(definition.to_json()))) == definition


def test_declarations_that_keep_the_delta_type_still_differ() -> None:
    """Truncated strings, rounded times and defaults for NULL: same Delta type, other values."""
    before = _definition(ID, NOTE, AT)
    narrowed = Column("note", "varchar", "varchar(5)", True, "utf8mb4", "utf8mb4_0900_ai_ci")
    rounded = Column("at", "datetime", "datetime", True, datetime_precision=0)
    not_null = Column("note", "varchar", "varchar(20)", False, "utf8mb4", "utf8mb4_0900_ai_ci")
    latin = Column("note", "varchar", "varchar(20)", True, "latin1", "latin1_swedish_ci")
    for changed in (_definition(ID, narrowed, AT), _definition(ID, NOTE, rounded)):
        assert not before.same_as(changed) and "columns changed" in before.changes_to(changed)
    assert not before.same_as(_definition(ID, not_null, AT))
    assert not before.same_as(_definition(ID, latin, AT))
    assert not before.same_as(_definition(ID, NOTE, AT, key=("id", "note")))


def test_column_order_does_not_matter_and_dropped_columns_are_left_out() -> None:
    before = _definition(ID, NOTE, AT)
    assert before.same_as(_definition(AT, ID, NOTE))  # the lake matches columns by name
    assert before.without({"note"}).same_as(_definition(ID, AT))
