"""Added columns: the type MySQL creates, and the value existing rows get, or an expression when unsure.

Every value below that is a :class:`LiteralDefault` is the canonical value :mod:`.normalise` gives;
``tests/integration/test_mysql_ddl_parity.py`` checks the same kinds of definitions on MySQL 9.7.
"""

from __future__ import annotations

import datetime
import decimal

import pytest

from airflow_mysql_cdc.engine.mysql.ddl import (
    AddColumn,
    AlterTable,
    ExpressionDefault,
    IndexOnly,
    LiteralDefault,
    NoDefault,
    OtherChange,
    implicit_default,
    parse_ddl,
)
from airflow_mysql_cdc.engine.mysql.types import ColumnType


def added(definition: str) -> AddColumn:
    parsed = parse_ddl(f"ALTER TABLE t ADD COLUMN {definition}", "shop")
    assert isinstance(parsed, AlterTable), parsed
    assert isinstance(parsed.actions[0], AddColumn), parsed.actions
    return parsed.actions[0]


def refusal(definition: str) -> OtherChange:
    parsed = parse_ddl(f"ALTER TABLE t ADD COLUMN {definition}", "shop")
    assert isinstance(parsed, AlterTable), parsed
    (action,) = parsed.actions
    assert isinstance(action, OtherChange), action
    return action


@pytest.mark.parametrize(
    ("type_text", "expected"),
    [
        ("TINYINT", ColumnType("c", "int", bits=8)),
        ("int1 unsigned", ColumnType("c", "uint", bits=8)),
        ("SMALLINT(6) ZEROFILL", ColumnType("c", "uint", bits=16)),
        ("MEDIUMINT SIGNED", ColumnType("c", "int", bits=24)),
        ("MIDDLEINT UNSIGNED", ColumnType("c", "uint", bits=24)),
        ("INTEGER(11)", ColumnType("c", "int", bits=32)),
        ("BIGINT UNSIGNED", ColumnType("c", "uint", bits=64)),
        ("BOOL", ColumnType("c", "int", bits=8)),
        ("BOOLEAN", ColumnType("c", "int", bits=8)),
        ("DECIMAL", ColumnType("c", "decimal", precision=10, scale=0)),
        ("NUMERIC(7)", ColumnType("c", "decimal", precision=7, scale=0)),
        ("DEC(65,30) UNSIGNED", ColumnType("c", "decimal", precision=65, scale=30)),
        ("FIXED(5,2)", ColumnType("c", "decimal", precision=5, scale=2)),
        ("FLOAT", ColumnType("c", "float")),
        ("FLOAT(24)", ColumnType("c", "float")),
        ("FLOAT(25)", ColumnType("c", "double")),
        ("FLOAT(7,3)", ColumnType("c", "float")),
        ("DOUBLE", ColumnType("c", "double")),
        ("DOUBLE PRECISION", ColumnType("c", "double")),
        ("DATE", ColumnType("c", "date")),
        ("DATETIME", ColumnType("c", "datetime")),
        ("DATETIME(6)", ColumnType("c", "datetime", fsp=6)),
        ("TIMESTAMP(3)", ColumnType("c", "timestamp", fsp=3)),
        ("TIME(2)", ColumnType("c", "time", fsp=2)),
        ("YEAR", ColumnType("c", "year")),
        ("YEAR(4)", ColumnType("c", "year")),
        ("CHAR", ColumnType("c", "text")),
        ("NATIONAL CHARACTER VARYING(5)", ColumnType("c", "text")),
        ("VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", ColumnType("c", "text")),
        ("CHAR(10) BINARY", ColumnType("c", "text")),
        ("TINYTEXT", ColumnType("c", "text")),
        ("TEXT(1000) CHARSET latin1", ColumnType("c", "text")),
        ("LONGTEXT", ColumnType("c", "text")),
        ("BINARY", ColumnType("c", "binary", fixed_length=1)),
        ("BINARY(16)", ColumnType("c", "binary", fixed_length=16)),
        ("VARBINARY(16)", ColumnType("c", "binary")),
        ("BLOB(10)", ColumnType("c", "binary")),
        ("LONGBLOB", ColumnType("c", "binary")),
        ("JSON", ColumnType("c", "json")),
        ("ENUM('Red', 'x'',''y')", ColumnType("c", "enum", members=("Red", "x','y"))),
        ("SET('a','b') CHARACTER SET latin1", ColumnType("c", "set", members=("a", "b"))),
        ("BIT", ColumnType("c", "bit", bits=1)),
        ("BIT(64)", ColumnType("c", "bit", bits=64)),
        ("POINT NOT NULL SRID 4326", ColumnType("c", "geometry")),
        ("GEOMCOLLECTION", ColumnType("c", "geometry")),
    ],
)
def test_add_column_type_is_the_type_mysql_creates(type_text: str, expected: ColumnType):
    assert added(f"c {type_text}").column_type == expected


@pytest.mark.parametrize(
    ("definition", "reason"),
    [
        ("c SERIAL", "SERIAL"),
        ("c BIGINT SERIAL DEFAULT VALUE", "SERIAL"),
        ("c REAL", "REAL_AS_FLOAT"),
        ("c INT GENERATED ALWAYS AS (a + 1) VIRTUAL", "generated"),
        ("c INT AS (a * 2) STORED NOT NULL", "generated"),
        ("c INT PRIMARY KEY", "primary key"),
        ("c INT KEY", "primary key"),
        ("c VARCHAR(5) CHARACTER SET binary", "binary"),
        ("c ENUM('a ', 'b')", "trailing spaces"),
        ("c ENUM('a\\tb')", "member"),
        ("c INT REFERENCES p (id)", "attribute"),
        ("c INT CHECK (c > 0)", "attribute"),
        ("c VARCHAR", "length"),
        ("c DECIMAL(66)", "size"),
        ("c LONG VARCHAR", "LONG"),
        ("c INT FIRST NOT NULL", "position"),
    ],
)
def test_add_column_not_read_with_certainty_is_an_other_change(definition: str, reason: str):
    assert reason in refusal(definition).reason


def test_add_column_unique_also_reports_a_key_that_may_become_the_row_key():
    parsed = parse_ddl("ALTER TABLE t ADD COLUMN c INT NOT NULL UNIQUE KEY", "shop")

    assert isinstance(parsed, AlterTable)
    assert parsed.actions == (
        AddColumn("c", ColumnType("c", "int", bits=32), False, NoDefault(), None),
        IndexOnly("ADD COLUMN c INT NOT NULL UNIQUE KEY", may_change_row_key=True),
    )


@pytest.mark.parametrize(
    ("definition", "value"),
    [
        ("c INT DEFAULT 5", 5),
        ("c INT DEFAULT '5'", 5),
        ("c INT DEFAULT -5", -5),
        ("c INT DEFAULT '-5'", -5),
        ("c TINYINT DEFAULT - 128", -128),
        ("c TINYINT UNSIGNED DEFAULT +255", 255),
        ("c BIGINT UNSIGNED DEFAULT 18446744073709551615", 18446744073709551615),
        ("c BOOLEAN DEFAULT TRUE", 1),
        ("c BOOL NOT NULL DEFAULT false", 0),
        ("c DECIMAL(5,2) DEFAULT 1.5", decimal.Decimal("1.50")),
        ("c DECIMAL(5,2) DEFAULT '-1.5'", decimal.Decimal("-1.50")),
        ("c DECIMAL(5,2) DEFAULT 1.235", decimal.Decimal("1.24")),
        ("c DECIMAL(5,2) DEFAULT -1.245", decimal.Decimal("-1.25")),
        ("c DECIMAL(5,2) DEFAULT -0.001", decimal.Decimal("0.00")),
        ("c DECIMAL DEFAULT 42", decimal.Decimal("42")),
        ("c DECIMAL(65,30) DEFAULT -1", decimal.Decimal("-1." + "0" * 30)),
        ("c FLOAT DEFAULT 0.1", 0.10000000149011612),
        ("c FLOAT DEFAULT '1e3'", 1000.0),
        ("c DOUBLE DEFAULT 0.1", 0.1),
        ("c DOUBLE DEFAULT -1.5e300", -1.5e300),
        ("c YEAR DEFAULT 2024", 2024),
        ("c YEAR DEFAULT '1901'", 1901),
        ("c YEAR DEFAULT 0", 0),
        ("c YEAR DEFAULT '0000'", 0),
        ("c BIT(3) DEFAULT b'101'", 5),
        ("c BIT(3) DEFAULT 0b11", 3),
        ("c BIT(16) DEFAULT x'0102'", 258),
        ("c BIT(8) DEFAULT 0xFF", 255),
        ("c BIT(8) DEFAULT 200", 200),
        ("c VARCHAR(10) DEFAULT 'it''s'", "it's"),
        ('c VARCHAR(10) DEFAULT "say ""hi"""', 'say "hi"'),
        ("c VARCHAR(10) DEFAULT 'a '", "a "),
        ("c VARCHAR(10) DEFAULT _utf8mb4'abc'", "abc"),
        ("c NVARCHAR(10) DEFAULT N'abc'", "abc"),
        ("c CHAR(2) DEFAULT ''", ""),
        ("c BINARY(4) DEFAULT 'ab'", b"ab\x00\x00"),
        ("c BINARY(2) DEFAULT x'0A'", b"\x0a\x00"),
        ("c VARBINARY(4) DEFAULT _binary'ab'", b"ab"),
        ("c ENUM('a','b,c') DEFAULT 'b,c'", "b,c"),
        ("c SET('a','b','c') DEFAULT 'c,a,c'", "a,c"),
        ("c SET('a','b') DEFAULT ''", ""),
        ("c DATE DEFAULT '2024-02-29'", datetime.date(2024, 2, 29)),
        ("c DATETIME DEFAULT '2024-01-02 03:04:05'", datetime.datetime(2024, 1, 2, 3, 4, 5)),
        (
            "c DATETIME(3) DEFAULT '2024-01-02 03:04:05.120000'",
            datetime.datetime(2024, 1, 2, 3, 4, 5, 120000),
        ),
        ("c DATETIME DEFAULT '2024-01-02'", datetime.datetime(2024, 1, 2)),
        ("c TIME DEFAULT '838:59:59'", datetime.timedelta(hours=838, minutes=59, seconds=59)),
        ("c TIME(1) DEFAULT '-00:00:01.5'", -datetime.timedelta(seconds=1, microseconds=500000)),
        ("c INT DEFAULT NULL", None),
        ("c TIMESTAMP NULL DEFAULT NULL", None),
        ("c JSON DEFAULT NULL", None),
    ],
)
def test_default_literal_is_the_canonical_value_of_existing_rows(definition: str, value: object):
    addition = added(definition)

    assert addition.default == LiteralDefault(value)
    assert type(addition.default.value) is type(value)


@pytest.mark.parametrize(
    ("definition", "reason"),
    [
        ("c VARCHAR(10) DEFAULT (CONCAT('a', ','))", "expression"),
        ("c DATETIME DEFAULT CURRENT_TIMESTAMP", "expression"),
        ("c DATETIME(6) DEFAULT NOW(6)", "expression"),
        ("c DATETIME DEFAULT '2024-01-02' ON UPDATE CURRENT_TIMESTAMP", "ON UPDATE"),
        ("c TIMESTAMP NULL DEFAULT '2024-01-02 03:04:05'", "time zone"),
        ("c BIGINT NOT NULL AUTO_INCREMENT", "AUTO_INCREMENT"),
        ("c VARCHAR(10) DEFAULT 'a\\nb'", "NO_BACKSLASH_ESCAPES"),
        ("c VARCHAR(10) DEFAULT 'é'", "character set"),
        ("c VARCHAR(10) DEFAULT _ucs2'ab'", "_ucs2"),
        ("c VARCHAR(2) DEFAULT 'abc'", "longer"),
        ("c CHAR(5) DEFAULT 'ab '", "trailing spaces"),
        ("c TEXT DEFAULT 'abc'", "TEXT"),
        ("c BLOB DEFAULT 'abc'", "BLOB"),
        ("c BINARY(1) DEFAULT 'ab'", "longer"),
        ("c JSON DEFAULT '{}'", "json"),
        ("c VARCHAR(10) DEFAULT 5", "quoted"),
        ("c VARCHAR(10) DEFAULT x'41'", "quoted"),
        ("c INT DEFAULT 1.5", "plain form"),
        ("c INT DEFAULT ' 5'", "plain form"),
        ("c INT DEFAULT 0x10", "plain form"),
        ("c TINYINT DEFAULT 128", "range"),
        ("c INT UNSIGNED DEFAULT -1", "range"),
        ("c DECIMAL(5,2) DEFAULT 999.995", "range"),
        ("c DECIMAL(5,2) DEFAULT 1e2", "plain form"),
        ("c DECIMAL(65,0) DEFAULT 1" + "0" * 65, "range"),
        ("c FLOAT(7,3) DEFAULT 1.5", "FLOAT(M,D)"),
        ("c FLOAT DEFAULT 1e39", "range"),
        ("c DOUBLE DEFAULT -0.0", "negative zero"),
        ("c YEAR DEFAULT 69", "two-digit"),
        ("c YEAR DEFAULT '0'", "plain form"),
        ("c BIT(2) DEFAULT b'111'", "wider"),
        ("c BIT(8) DEFAULT 'a'", "bit"),
        ("c ENUM('a','b') DEFAULT 'B'", "members"),
        ("c ENUM('a','b') DEFAULT 1", "quoted"),
        ("c SET('a','b') DEFAULT 'a,x'", "members"),
        ("c DATE DEFAULT '0000-00-00'", "zero"),
        ("c DATE DEFAULT '2023-02-29'", "invalid"),
        ("c DATE DEFAULT '20240102'", "plain form"),
        ("c DATETIME(1) DEFAULT '2024-01-02 03:04:05.16'", "fractional"),
        ("c TIME DEFAULT '839:00:00'", "range"),
        ("c TIME DEFAULT '1 02:00:00'", "plain form"),
        ("c GEOMETRY DEFAULT (POINT(0, 0))", "expression"),
    ],
)
def test_default_that_depends_on_more_than_the_statement_is_an_expression(definition: str, reason: str):
    default = added(definition).default

    assert isinstance(default, ExpressionDefault), default
    assert reason in default.reason


def test_default_expression_keeps_its_text_as_written():
    default = added("c VARCHAR(10) DEFAULT (CONCAT('a', ',', \"b\"))").default

    assert default == ExpressionDefault("(CONCAT('a', ',', \"b\"))", "an expression")


def test_no_default_clause_leaves_existing_rows_to_the_implicit_default():
    addition = added("c INT UNSIGNED NOT NULL")

    assert addition.default == NoDefault()
    assert addition.existing_rows_default == LiteralDefault(0)


def test_explicit_default_is_what_existing_rows_get():
    assert added("c INT NOT NULL DEFAULT 3").existing_rows_default == LiteralDefault(3)


def test_timestamp_null_without_default_is_null_whatever_explicit_defaults_for_timestamp():
    # Checked on MySQL 9.7 with explicit_defaults_for_timestamp OFF: `ts TIMESTAMP NULL` has DEFAULT NULL.
    assert added("ts TIMESTAMP NULL").existing_rows_default == LiteralDefault(None)


def test_timestamp_null_attribute_overridden_by_a_later_not_null_is_not_a_null_default():
    assert isinstance(added("ts TIMESTAMP NULL NOT NULL").existing_rows_default, ExpressionDefault)


def test_timestamp_without_null_attribute_depends_on_explicit_defaults_for_timestamp():
    # With explicit_defaults_for_timestamp OFF a bare TIMESTAMP is NOT NULL DEFAULT CURRENT_TIMESTAMP.
    existing = added("ts TIMESTAMP").existing_rows_default

    assert isinstance(existing, ExpressionDefault)


@pytest.mark.parametrize(
    ("column_type", "value"),
    [
        (ColumnType("c", "int", bits=32), 0),
        (ColumnType("c", "uint", bits=64), 0),
        (ColumnType("c", "decimal", precision=7, scale=3), decimal.Decimal("0.000")),
        (ColumnType("c", "float"), 0.0),
        (ColumnType("c", "double"), 0.0),
        (ColumnType("c", "year"), 0),
        (ColumnType("c", "bit", bits=5), 0),
        (ColumnType("c", "text"), ""),
        (ColumnType("c", "binary", fixed_length=3), b"\x00\x00\x00"),
        (ColumnType("c", "binary"), b""),
        (ColumnType("c", "enum", members=("x", "y")), "x"),
        (ColumnType("c", "set", members=("p", "q")), ""),
    ],
)
def test_implicit_default_of_a_not_null_column_is_the_zero_of_its_type(
    column_type: ColumnType, value: object
):
    # Checked on MySQL 9.7: ADD COLUMN ... NOT NULL on a table with rows gives them these values.
    assert implicit_default(column_type, nullable=False) == LiteralDefault(value)


@pytest.mark.parametrize("kind", ["date", "datetime", "time", "json", "geometry"])
def test_implicit_default_of_a_not_null_temporal_json_or_spatial_column_is_an_expression(kind: str):
    # A zero date, 00:00:00 or a JSON null: MySQL 9.7 refuses the dates in strict mode.
    assert isinstance(implicit_default(ColumnType("c", kind), nullable=False), ExpressionDefault)


@pytest.mark.parametrize("kind", ["int", "text", "date", "json", "enum"])
def test_implicit_default_of_a_nullable_column_is_null(kind: str):
    assert implicit_default(ColumnType("c", kind), nullable=True) == LiteralDefault(None)


@pytest.mark.parametrize("nullable", [True, False])
def test_implicit_default_of_a_timestamp_is_an_expression(nullable: bool):
    assert isinstance(implicit_default(ColumnType("c", "timestamp"), nullable), ExpressionDefault)
