"""What each DDL does to a tracked table: evolve only when the statement says what existing rows hold."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_mysql_cdc.engine.apply.schema_decisions import decide
from airflow_mysql_cdc.engine.mysql.ddl import parse_ddl
from airflow_mysql_cdc.engine.mysql.types import ColumnType

LAKE = {"id": pa.int32(), "status": pa.string(), "kept": pa.int64()}  # kept: dropped earlier
NOW = (ColumnType("id", "int", bits=32), ColumnType("status", "text"))


def _decide(statement: str, columns=NOW, table: str = "shop.orders"):
    return decide(table, parse_ddl(statement, "shop"), statement, LAKE, lambda ref: columns)


@pytest.mark.parametrize(
    ("statement", "action"),
    [
        ("ALTER TABLE orders ADD COLUMN note VARCHAR(9) DEFAULT 'x', DROP COLUMN status", "evolve"),
        ("ALTER TABLE orders ADD INDEX i (status), ALGORITHM=INPLACE", "unchanged"),
        ("ALTER TABLE orders ALTER COLUMN status SET DEFAULT 'n'", "unchanged"),
        ("ALTER TABLE orders MODIFY status VARCHAR(3)", "resnapshot"),
        ("ALTER TABLE orders RENAME COLUMN status TO state", "resnapshot"),
        ("ALTER TABLE orders DROP PRIMARY KEY, ADD PRIMARY KEY (id, status)", "resnapshot"),
        ("ALTER TABLE orders ADD COLUMN at DATETIME DEFAULT CURRENT_TIMESTAMP", "resnapshot"),
        ("ALTER TABLE orders ADD COLUMN n INT AUTO_INCREMENT UNIQUE", "resnapshot"),
        ("ALTER TABLE orders ADD COLUMN kept VARCHAR(3)", "resnapshot"),  # the lake keeps an int64 'kept'
        ("ALTER TABLE orders ADD COLUMN kept BIGINT DEFAULT 4", "evolve"),  # same type: existing rows reset
        ("TRUNCATE orders", "truncate"),
        ("DROP TABLE IF EXISTS orders, other", "leave"),
        ("RENAME TABLE orders TO orders_2024", "leave"),
        ("ALTER TABLE orders RENAME TO archive.orders", "leave"),
        ("DROP DATABASE shop", "leave"),
        ("RENAME TABLE orders TO _orders_del, _orders_gho TO orders", "unchanged"),  # same columns
        ("RENAME TABLE other TO orders", "resnapshot"),  # a table renamed into a tracked name
        ("OPTIMIZE TABLE orders", "unchanged"),  # not recognised: columns compared, equal
        # Its rows are swapped with a partition's, with no row events: they are unknown from here.
        ("ALTER TABLE archive EXCHANGE PARTITION p0 WITH TABLE orders", "resnapshot"),
        ("ALTER TABLE orders EXCHANGE PARTITION p0 WITH TABLE archive", "resnapshot"),
    ],
)
def test_each_kind_of_statement_decides_the_tables_action(statement: str, action: str) -> None:
    decision = _decide(statement)
    assert decision is not None and decision.action == action, decision


def test_a_swap_or_an_unrecognised_statement_with_other_columns_resnapshots() -> None:
    other = (*NOW, ColumnType("score", "int", bits=32))
    swap = _decide("RENAME TABLE orders TO _orders_del, _orders_gho TO orders", columns=other)
    assert swap is not None and swap.action == "resnapshot" and "differ" in swap.reason
    unknown = _decide("OPTIMIZE TABLE orders", columns=other)
    assert unknown is not None and unknown.action == "resnapshot" and "not recognised" in unknown.reason


def test_a_swap_or_an_unrecognised_statement_redeclaring_a_column_under_the_same_delta_type_resnapshots() -> (
    None
):
    """A copy with ``status VARCHAR(3)`` (was 20) holds truncated values under the same Delta type."""
    redeclared = "declared otherwise than when its snapshot read it (columns changed: status)"
    for statement in ("RENAME TABLE orders TO _orders_del, _orders_gho TO orders", "OPTIMIZE TABLE orders"):
        decision = decide(
            "shop.orders", parse_ddl(statement, "shop"), statement, LAKE, lambda ref: NOW,
            redeclared=lambda ref: redeclared,
        )  # fmt: skip
        assert decision is not None and decision.action == "resnapshot" and redeclared in decision.reason


def test_statements_on_other_tables_or_temporary_ones_do_not_touch_the_table() -> None:
    assert _decide("ALTER TABLE orders_archive ADD COLUMN x INT") is None
    assert _decide("DROP TEMPORARY TABLE orders") is None
    assert _decide("RENAME TABLE a TO b") is None


def test_added_columns_carry_the_value_existing_rows_got() -> None:
    decision = _decide("ALTER TABLE orders ADD COLUMN qty INT NOT NULL, ADD COLUMN note TEXT")
    assert decision is not None
    assert [(a.column.name, a.existing_rows_value) for a in decision.new_columns] == [
        ("qty", 0),
        ("note", None),
    ]


def test_dropping_a_primary_key_column_or_changing_a_unique_key_without_a_primary_key_resnapshots() -> None:
    def decided(statement: str, key: tuple[str, ...] | None):
        parsed = parse_ddl(statement, "shop")
        return decide("shop.orders", parsed, statement, LAKE, lambda ref: NOW, lambda ref: key)

    assert decided("ALTER TABLE orders DROP COLUMN id", ("id", "status")).action == "resnapshot"
    assert decided("ALTER TABLE orders DROP COLUMN kept", ("id",)).action == "evolve"
    assert decided("ALTER TABLE orders ADD UNIQUE KEY u (status)", ()).action == "resnapshot"
    assert decided("ALTER TABLE orders ADD UNIQUE KEY u (status)", ("id",)).action == "unchanged"
    assert decided("CREATE UNIQUE INDEX u ON orders (status)", ()).action == "resnapshot"
