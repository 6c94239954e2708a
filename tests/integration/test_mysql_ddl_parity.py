"""The DDL parser against MySQL itself: the column an ADD COLUMN makes, and its existing rows' value.

Each definition below is added to a table that already holds rows. Whatever the parser says must be
what MySQL did: the parsed :class:`ColumnType` equals the one read back from ``information_schema``,
and a :class:`LiteralDefault` equals the value every pre-existing row now holds (read the way
snapshots read it). Where the parser is unsure (an :class:`ExpressionDefault`) it promises nothing,
and the engine re-snapshots; ``LITERAL`` below pins which definitions must stay certain, so a parser
that grew timid would fail here too.
"""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.mysql.ddl import AddColumn, AlterTable, LiteralDefault, parse_ddl
from airflow_mysql_cdc.engine.mysql.normalise import (
    SNAPSHOT_SESSION_STATEMENTS,
    normalise_select_row,
    select_list,
)
from airflow_mysql_cdc.engine.mysql.types import read_table_column_types
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.support.mysql import execute

pytestmark = pytest.mark.mysql

LITERAL, UNSURE = True, False

DEFINITIONS = [
    # implicit defaults of NOT NULL columns (no DEFAULT clause)
    ("i_nn INT NOT NULL", LITERAL),
    ("u64_nn BIGINT UNSIGNED NOT NULL", LITERAL),
    ("dec_nn DECIMAL(7,3) NOT NULL", LITERAL),
    ("f_nn FLOAT NOT NULL", LITERAL),
    ("d_nn DOUBLE PRECISION NOT NULL", LITERAL),
    ("y_nn YEAR NOT NULL", LITERAL),
    ("bit_nn BIT(5) NOT NULL", LITERAL),
    ("vc_nn VARCHAR(4) NOT NULL", LITERAL),
    ("ch_nn CHAR(3) CHARACTER SET latin1 NOT NULL", LITERAL),
    ("bn_nn BINARY(3) NOT NULL", LITERAL),
    ("vb_nn VARBINARY(3) NOT NULL", LITERAL),
    ("tx_nn TEXT NOT NULL", LITERAL),
    ("bl_nn MEDIUMBLOB NOT NULL", LITERAL),
    ("e_nn ENUM('x,y', 'It''s', 'z') NOT NULL", LITERAL),
    ("s_nn SET('p', 'q') NOT NULL", LITERAL),
    ("tm_nn TIME NOT NULL", UNSURE),
    ("j_nn JSON NOT NULL", UNSURE),
    # nullable without DEFAULT: NULL
    ("i_null MEDIUMINT UNSIGNED ZEROFILL", LITERAL),
    ("dt_null DATE", LITERAL),
    ("ts_null TIMESTAMP(6) NULL", LITERAL),
    ("g_null GEOMETRY", LITERAL),
    ("p_null POINT SRID 4326", LITERAL),
    # literal defaults
    ("i_str INT DEFAULT '5'", LITERAL),
    ("i_neg SMALLINT DEFAULT -32768", LITERAL),
    ("b_true BOOLEAN DEFAULT TRUE", LITERAL),
    ("u64_max BIGINT UNSIGNED DEFAULT 18446744073709551615", LITERAL),
    ("dec_round DECIMAL(5,2) DEFAULT -1.235", LITERAL),
    ("dec_str DECIMAL(5,2) DEFAULT '1.5'", LITERAL),
    ("dec_neg_zero DECIMAL(5,2) DEFAULT -0.001", LITERAL),
    ("dec_plain DECIMAL DEFAULT 42", LITERAL),
    ("dec_wide DECIMAL(65,30) DEFAULT -12345678901234567890123456789012345.5", LITERAL),
    ("f_tenth FLOAT DEFAULT 0.1", LITERAL),
    ("f_big FLOAT(30) DEFAULT 0.1", LITERAL),
    ("f_small FLOAT(10) DEFAULT 1e-3", LITERAL),
    ("d_exp DOUBLE DEFAULT -1.5e300", LITERAL),
    ("y_num YEAR DEFAULT 2024", LITERAL),
    ("y_zero YEAR DEFAULT 0", LITERAL),
    ("y_zero_text YEAR DEFAULT '0000'", LITERAL),
    ("bit_b BIT(3) DEFAULT b'101'", LITERAL),
    ("bit_x BIT(16) DEFAULT x'0102'", LITERAL),
    ("bit_n BIT(8) DEFAULT 200", LITERAL),
    ("vc_text VARCHAR(20) DEFAULT 'a, (b) ''c'' \"d\"'", LITERAL),
    ("vc_dq VARCHAR(5) DEFAULT \"x''y\"", LITERAL),
    ("vc_intro VARCHAR(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT _utf8mb4'abc'", LITERAL),
    ("vc_national NVARCHAR(5) DEFAULT N'abc'", LITERAL),
    ("ch_text CHAR(4) DEFAULT 'ab'", LITERAL),
    ("bn_text BINARY(4) DEFAULT 'ab'", LITERAL),
    ("bn_hex BINARY(2) DEFAULT x'0A'", LITERAL),
    ("vb_text VARBINARY(4) DEFAULT 'ab'", LITERAL),
    ("e_member ENUM('a', 'b,c') NOT NULL DEFAULT 'b,c'", LITERAL),
    ("s_members SET('a', 'b', 'c') DEFAULT 'c,a'", LITERAL),
    ("s_empty SET('a', 'b') NOT NULL DEFAULT ''", LITERAL),
    ("dt_text DATE DEFAULT '2024-02-29'", LITERAL),
    ("dtm_text DATETIME(3) DEFAULT '2024-01-02 03:04:05.120'", LITERAL),
    ("dtm_day DATETIME DEFAULT '2024-01-02'", LITERAL),
    ("tm_text TIME(1) DEFAULT '-838:59:59.0'", LITERAL),
    ("tm_frac TIME(2) DEFAULT '12:34:56.78'", LITERAL),
    ("null_default VARCHAR(3) DEFAULT NULL", LITERAL),
    # what the parser leaves to a re-snapshot (types must still be right)
    ("dec_more DECIMAL(5,2) DEFAULT 1.2345e0", UNSURE),
    ("i_frac INT DEFAULT 1.5", UNSURE),
    ("y_two YEAR DEFAULT 69", UNSURE),
    ("e_case ENUM('a', 'b') DEFAULT 'B'", UNSURE),
    ("ch_space CHAR(5) DEFAULT 'ab  '", UNSURE),
    ("dtm_round DATETIME(1) DEFAULT '2024-01-02 03:04:05.16'", UNSURE),
    ("vc_number VARCHAR(5) DEFAULT 5", UNSURE),
    ("vc_escape VARCHAR(5) DEFAULT 'a\\tb'", UNSURE),
    ("vc_expression VARCHAR(30) DEFAULT (CONCAT('a', 'b'))", UNSURE),
    ("j_expression JSON DEFAULT (JSON_OBJECT('k', 1))", UNSURE),
    ("ts_now TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)", UNSURE),
    ("ts_literal TIMESTAMP NULL DEFAULT '2024-01-02 03:04:05'", UNSURE),
    ("dtm_on_update DATETIME DEFAULT '2024-01-02' ON UPDATE CURRENT_TIMESTAMP", UNSURE),
    ("i_auto BIGINT NOT NULL AUTO_INCREMENT UNIQUE", UNSURE),
]


def test_added_columns_have_the_type_and_existing_row_values_the_parser_reads(mysql_database: MySqlEndpoint):
    database = mysql_database.database
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1), (2), (3)")
    added: list[AddColumn] = []
    for definition, literal in DEFINITIONS:
        statement = f"ALTER TABLE `t` ADD COLUMN {definition}"
        execute(mysql_database, statement)
        parsed = parse_ddl(statement, database)
        assert isinstance(parsed, AlterTable), (definition, parsed)
        addition = parsed.actions[0]
        assert isinstance(addition, AddColumn), (definition, addition)
        certain = isinstance(addition.existing_rows_default, LiteralDefault)
        assert certain == literal, (definition, addition.existing_rows_default)
        added.append(addition)

    with mysql_database.connect() as connection, connection.cursor() as cursor:
        for session_statement in SNAPSHOT_SESSION_STATEMENTS:
            cursor.execute(session_statement)
        server_types = {column.name: column for column in read_table_column_types(cursor, database, "t")}
        parsed_types = [addition.column_type for addition in added]
        cursor.execute(f"SELECT {select_list(parsed_types)} FROM t")
        rows = [normalise_select_row(parsed_types, row) for row in cursor.fetchall()]

    assert [server_types[column.name] for column in parsed_types] == parsed_types
    for addition in added:
        expected = addition.existing_rows_default
        if isinstance(expected, LiteralDefault):
            held = [row[addition.name] for row in rows]
            assert held == [expected.value] * 3, (addition.name, held, expected.value)
