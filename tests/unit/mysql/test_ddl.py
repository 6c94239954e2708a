"""The DDL parser: each statement kind and ALTER clause, as MySQL logs them, and what it refuses to guess."""

from __future__ import annotations

import datetime
import decimal

import pytest

from airflow_mysql_cdc.engine.mysql import ddl
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.types import ColumnType


def _actions(statement: str) -> tuple:
    parsed = ddl.parse_ddl(statement, "shop")
    assert isinstance(parsed, ddl.AlterTable), parsed
    return parsed.actions


def test_added_columns_carry_their_type_nullability_default_and_position() -> None:
    first, second, third = _actions(
        "ALTER TABLE `shop`.`orders` ADD COLUMN `qty` int unsigned NOT NULL DEFAULT '5' AFTER `id`, "
        "ADD flag TINYINT(1) NOT NULL FIRST, ADD COLUMN price DECIMAL(8,3) DEFAULT 1.25 COMMENT 'a, b'"
    )
    assert first == ddl.AddColumn(
        "qty", ColumnType("qty", "uint", bits=32), False, ddl.LiteralDefault(5), "AFTER id"
    )
    assert second == ddl.AddColumn("flag", ColumnType("flag", "int", bits=8), False, ddl.NoDefault(), "FIRST")
    assert third.default == ddl.LiteralDefault(decimal.Decimal("1.250"))


@pytest.mark.parametrize(
    ("definition", "value"),
    [
        ("VARCHAR(20) DEFAULT 'it''s, (x)'", "it's, (x)"),
        ("VARCHAR(20) DEFAULT _utf8mb4'a\\nb'", "a\nb"),
        ("ENUM('a','b,c') NOT NULL DEFAULT 'B,C'", "b,c"),
        ("SET('x','y','z') DEFAULT 'z,x'", "x,z"),
        ("DATE DEFAULT '2024-02-29'", datetime.date(2024, 2, 29)),
        ("DATETIME(3) DEFAULT '2024-01-02 03:04:05.250'", datetime.datetime(2024, 1, 2, 3, 4, 5, 250000)),
        ("BIT(4) DEFAULT b'101'", 5),
        ("BINARY(3) DEFAULT x'41'", b"A\0\0"),
        ("DOUBLE DEFAULT -1.5e3", -1500.0),
        ("FLOAT DEFAULT 0.1", 0.10000000149011612),
        ("INT DEFAULT NULL", None),
        ("TINYINT DEFAULT TRUE", 1),
    ],
)
def test_literal_defaults_become_the_canonical_value_existing_rows_hold(
    definition: str, value: object
) -> None:
    (added,) = _actions(f"ALTER TABLE t ADD COLUMN c {definition}")
    assert added.default == ddl.LiteralDefault(value)


@pytest.mark.parametrize(
    "definition",
    [
        "TIMESTAMP DEFAULT '2024-01-01 00:00:00'",  # read in the DDL session's time zone
        "INT DEFAULT '5.7'",  # MySQL rounds
        "DECIMAL(5,1) DEFAULT 1.25",  # MySQL rounds
        "YEAR DEFAULT 24",  # two-digit year
        "VARCHAR(36) DEFAULT (uuid())",
        "ENUM('a','b') DEFAULT 'c'",
    ],
)
def test_defaults_mysql_computes_or_converts_are_not_guessed(definition: str) -> None:
    (added,) = _actions(f"ALTER TABLE t ADD COLUMN c {definition}")
    assert isinstance(added.default, ddl.ExpressionDefault)


@pytest.mark.parametrize(
    "definition",
    [
        "DATETIME DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP",
        "INT AUTO_INCREMENT UNIQUE",
        "INT GENERATED ALWAYS AS (id * 2) STORED",
        "INT AS (id + 1) VIRTUAL",
    ],
)
def test_columns_whose_values_mysql_computes_are_other_changes(definition: str) -> None:
    (action,) = _actions(f"ALTER TABLE t ADD COLUMN c {definition}")
    assert isinstance(action, ddl.OtherChange)


def test_implicit_defaults_of_not_null_columns_are_mysqls_and_unknown_kinds_are_not_guessed() -> None:
    assert ddl.implicit_default(ColumnType("c", "int", bits=32), nullable=False) == ddl.LiteralDefault(0)
    assert ddl.implicit_default(ColumnType("c", "text"), nullable=False) == ddl.LiteralDefault("")
    assert ddl.implicit_default(ColumnType("c", "enum", members=("x", "y")), False) == ddl.LiteralDefault("x")
    assert ddl.implicit_default(ColumnType("c", "date"), nullable=True) == ddl.LiteralDefault(None)
    assert isinstance(ddl.implicit_default(ColumnType("c", "date"), nullable=False), ddl.ExpressionDefault)


def test_every_other_alter_clause_is_classified() -> None:
    actions = _actions(
        "ALTER TABLE t DROP COLUMN a, DROP b, MODIFY c BIGINT, CHANGE COLUMN d e INT, RENAME COLUMN f TO g, "
        "ADD INDEX i (a), DROP KEY j, ADD UNIQUE KEY k (a), DROP PRIMARY KEY, ADD PRIMARY KEY (a, b), "
        "ALTER COLUMN h SET DEFAULT 3, ALTER h DROP DEFAULT, ENGINE=InnoDB, ALGORITHM=INPLACE, LOCK=NONE, "
        "CONVERT TO CHARACTER SET utf8mb4, RENAME INDEX i TO i2"
    )
    assert [type(action).__name__ for action in actions] == [
        "DropColumn", "DropColumn", "ModifyColumn", "ChangeColumn", "RenameColumn", "IndexOnly", "IndexOnly",
        "IndexOnly", "PrimaryKeyChange", "PrimaryKeyChange", "DefaultChange", "DefaultChange", "TableOption",
        "TableOption", "TableOption", "OtherChange", "IndexOnly",
    ]  # fmt: skip


def test_migration_tools_cut_over_renames_are_pairs_in_order() -> None:
    parsed = ddl.parse_ddl(
        "rename /* gh-ost */ table `shop`.`t` to `shop`.`_t_del`, `shop`.`_t_gho` to `shop`.`t`", "x"
    )
    assert parsed == ddl.RenameTables(
        (
            (TableRef("shop", "t"), TableRef("shop", "_t_del")),
            (TableRef("shop", "_t_gho"), TableRef("shop", "t")),
        )
    )


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("TRUNCATE TABLE `orders`", ddl.TruncateTable(TableRef("shop", "orders"))),
        (
            "DROP TABLE IF EXISTS `a`,`b` /* generated by server */",
            ddl.DropTables((TableRef("shop", "a"), TableRef("shop", "b"))),
        ),
        ("DROP TEMPORARY TABLE t", ddl.DropTables((TableRef("shop", "t"),), temporary=True)),
        ("DROP DATABASE `other`", ddl.DropDatabase("other")),
        ("CREATE INDEX i ON other.t (a)", ddl.IndexChange(TableRef("other", "t"))),
        ("DROP INDEX i ON t", ddl.IndexChange(TableRef("shop", "t"))),
        (
            "ALTER TABLE t RENAME TO u",
            ddl.AlterTable(TableRef("shop", "t"), (ddl.RenameTo(TableRef("shop", "u")),)),
        ),
        ("/*!80013 ALTER TABLE t DROP c */", ddl.AlterTable(TableRef("shop", "t"), (ddl.DropColumn("c"),))),
    ],
)
def test_statement_kinds(statement: str, expected: ddl.Ddl) -> None:
    assert ddl.parse_ddl(statement, "shop") == expected


def test_statements_the_parser_does_not_know_are_unparsed_never_guessed() -> None:
    assert isinstance(ddl.parse_ddl("OPTIMIZE TABLE t", "shop"), ddl.Unparsed)
    assert isinstance(ddl.parse_ddl("ALTER TABLE t ADD COLUMN c SERIAL", "shop"), ddl.Unparsed)
    assert isinstance(ddl.parse_ddl("ALTER TABLE t ADD COLUMN c FOO(3)", "shop"), ddl.Unparsed)
