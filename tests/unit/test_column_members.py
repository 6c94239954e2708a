"""ENUM and SET members read back from ``information_schema.COLUMNS.COLUMN_TYPE`` exactly.

The texts below are what MySQL 9.7 prints for the declarations in the comments (checked on the test
server): a quote inside a member is doubled, a backslash doubled, a newline and a carriage return
escaped, any other character (a comma, a tab) left as it is.
"""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.mysql.schema import Column, parse_members


@pytest.mark.parametrize(
    ("column_type", "members"),
    [
        # ENUM('x'',''y', 'z'): one member holding quote, comma, quote
        ("enum('x'',''y','z')", ("x','y", "z")),
        ("enum('b','a''s','c,d')", ("b", "a's", "c,d")),
        # ENUM('a\\b', 'pc\%u\_'): MySQL keeps the backslash of \% and \_
        ("enum('a\\\\b','pc\\\\%u\\\\_')", ("a\\b", "pc\\%u\\_")),
        # ENUM('n\nl', 'r\rx', 't\tb', 'dq"'): newline and CR are escaped, a tab is not
        ("enum('n\\nl','r\\rx','t\tb','dq\"')", ("n\nl", "r\rx", "t\tb", 'dq"')),
        # ENUM('Up', '', ' sp'): case, the empty member and a leading space are data
        ("enum('Up','',' sp')", ("Up", "", " sp")),
        ("set('x''y','a\\\\b','Up')", ("x'y", "a\\b", "Up")),
        ("enum(''',''')", ("','",)),
        ("enum('''')", ("'",)),
    ],
)
def test_enum_and_set_members_parse_doubled_and_escaped_quotes_and_commas(column_type, members):
    assert parse_members(column_type) == members


def test_members_of_a_column_come_from_its_declaration_in_its_own_case():
    column = Column("e", "enum", "enum('x'',''y','Up')", nullable=False)
    assert column.members == ("x','y", "Up")
    assert Column("i", "int", "int unsigned", nullable=False).members == ()


@pytest.mark.parametrize("column_type", ["enum('a'", "enum('a',)", "enum('a' 'b')", "enum(a)"])
def test_a_declaration_that_is_not_a_member_list_is_refused_by_its_text(column_type):
    with pytest.raises(ValueError, match="member list"):
        parse_members(column_type)
