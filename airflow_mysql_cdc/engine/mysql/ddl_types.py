"""A column type as a DDL statement writes it (``DECIMAL(10,2) UNSIGNED``), as the one type model.

Invariant: the :class:`~.types.ColumnType` built here equals what ``information_schema`` and the
binlog's table map give for the same column (:meth:`~.types.ColumnType.from_column`,
:meth:`~.types.ColumnType.from_binlog_column`), so an added column's lake type is the one its
rows will have; the rows' table map checks it again when they arrive. A type written in a way this
module does not know raises ``ValueError`` (the statement is then not recognised).
"""

from __future__ import annotations

from airflow_mysql_cdc.engine.mysql.ddl_tokens import Token
from airflow_mysql_cdc.engine.mysql.types import ColumnType

_INTEGER_BITS = {
    "TINYINT": 8, "BOOL": 8, "BOOLEAN": 8, "SMALLINT": 16, "MEDIUMINT": 24, "INT": 32, "INTEGER": 32,
    "BIGINT": 64, "INT1": 8, "INT2": 16, "INT3": 24, "INT4": 32, "INT8": 64, "MIDDLEINT": 24,
}  # fmt: skip
_TEXT = ("CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "NCHAR", "NVARCHAR", "CHARACTER")
_BLOBS = ("VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB")
_SIMPLE = {"DATE": "date", "DATETIME": "datetime", "TIMESTAMP": "timestamp", "TIME": "time", "YEAR": "year"}
_GEOMETRY = (
    "GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON",
    "GEOMETRYCOLLECTION", "GEOMCOLLECTION",
)  # fmt: skip


def column_type_of(name: str, tokens: list[Token], at: int) -> tuple[ColumnType, int]:
    """The type starting at ``tokens[at]`` and the position after it (attributes like UNSIGNED too)."""
    word = tokens[at].value.upper() if tokens[at].kind == "word" else ""
    at += 1
    if word in ("DOUBLE",) and at < len(tokens) and tokens[at].is_word("PRECISION"):
        at += 1
    if word == "NATIONAL":
        word = tokens[at].value.upper()
        at += 1
    if word in ("CHARACTER", "CHAR") and at < len(tokens) and tokens[at].is_word("VARYING"):
        word, at = "VARCHAR", at + 1
    arguments, at = _arguments(tokens, at)
    unsigned = False
    binary_charset = False
    while at < len(tokens):
        token = tokens[at]
        if token.is_word("UNSIGNED"):
            unsigned, at = True, at + 1
        elif token.is_word("SIGNED", "ZEROFILL"):
            at += 1
        elif token.is_word("CHARACTER") and at + 2 < len(tokens) and tokens[at + 1].is_word("SET"):
            binary_charset, at = tokens[at + 2].value.lower() == "binary", at + 3
        elif token.is_word("CHARSET"):
            binary_charset, at = tokens[at + 1].value.lower() == "binary", at + 2
        elif token.is_word("BINARY", "ASCII", "UNICODE", "BYTE"):
            at += 1  # a binary *collation* of a text column: still text
        else:
            break
    return _column_type(name, word, arguments, unsigned, binary_charset), at


def _arguments(tokens: list[Token], at: int) -> tuple[list[Token], int]:
    if at >= len(tokens) or tokens[at].text != "(":
        return [], at
    depth, end = 0, at
    while True:
        if tokens[end].text == "(":
            depth += 1
        elif tokens[end].text == ")":
            depth -= 1
            if depth == 0:
                break
        end += 1
    return [t for t in tokens[at + 1 : end] if t.text != ","], end + 1


def _numbers(arguments: list[Token]) -> list[int]:
    return [int(token.value) for token in arguments]


def _column_type(
    name: str, word: str, arguments: list[Token], unsigned: bool, binary_charset: bool
) -> ColumnType:
    if word in _INTEGER_BITS:
        return ColumnType(name, "uint" if unsigned else "int", bits=_INTEGER_BITS[word])
    if word in ("DECIMAL", "NUMERIC", "DEC", "FIXED"):
        numbers = _numbers(arguments)
        precision = numbers[0] if numbers else 10
        scale = numbers[1] if len(numbers) > 1 else 0
        return ColumnType(name, "decimal", precision=precision, scale=scale)
    if word == "FLOAT":
        numbers = _numbers(arguments)
        return ColumnType(name, "double" if len(numbers) == 1 and numbers[0] > 24 else "float")
    if word in ("DOUBLE", "REAL"):
        return ColumnType(name, "double")
    if word in _SIMPLE:
        numbers = _numbers(arguments)
        fsp = numbers[0] if numbers and word != "YEAR" else 0
        return ColumnType(name, _SIMPLE[word], fsp=fsp)
    if word in _TEXT:
        if binary_charset:
            fixed = (_numbers(arguments) or [1])[0] if word in ("CHAR", "CHARACTER", "NCHAR") else 0
            return ColumnType(name, "binary", fixed_length=fixed)
        return ColumnType(name, "text")
    if word == "BINARY":
        return ColumnType(name, "binary", fixed_length=(_numbers(arguments) or [1])[0])
    if word in _BLOBS:
        return ColumnType(name, "binary")
    if word == "JSON":
        return ColumnType(name, "json")
    if word in ("ENUM", "SET"):
        if any(token.kind != "string" for token in arguments):
            raise ValueError(f"{word} members must be quoted strings")
        return ColumnType(name, word.lower(), members=tuple(token.value for token in arguments))
    if word == "BIT":
        return ColumnType(name, "bit", bits=(_numbers(arguments) or [1])[0])
    if word in _GEOMETRY:
        return ColumnType(name, "geometry")
    raise ValueError(f"column type {word or '?'} not recognised")
