"""The value an added column gives the rows that existed before ``ADD COLUMN``.

Invariant: a :class:`LiteralDefault` holds exactly the canonical value (:mod:`..normalise`) that a
SELECT or the binlog would give for every pre-existing row of the new column, so the engine can
write it into the lake without reading the table. Anything the statement alone does not decide
with certainty is an :class:`ExpressionDefault`, and the engine re-snapshots the table instead:

* expressions and functions (``(expr)``, ``CURRENT_TIMESTAMP``, ``NOW()``), ``ON UPDATE``,
  ``AUTO_INCREMENT`` (numbers the existing rows);
* every ``TIMESTAMP`` default but ``NULL``: a literal means a time in the DDL session's time zone,
  and without a ``NULL`` attribute its nullability and default depend on
  ``explicit_defaults_for_timestamp``;
* values the server stores in ways that depend on its settings, or that the literal does not
  spell exactly: a backslash in a string (``NO_BACKSLASH_ESCAPES``), non-ASCII text (the
  connection's character set), text longer than the column, more fractional digits than a
  temporal column keeps (rounded, or truncated under ``TIME_TRUNCATE_FRACTIONAL``), a number or
  date in any but its plain form, two-digit years, zero and invalid dates, ENUM/SET values that
  are not exactly members (the collation may match ``'B'`` to ``'b'``), ``CHAR`` text with
  trailing spaces, literal defaults on ``TEXT``/``BLOB``/``JSON`` (refused in strict mode),
  ``FLOAT(M,D)``/``DOUBLE(M,D)`` (rounded to D).

A DECIMAL literal with more decimals than the column's scale *is* certain: MySQL rounds it half
away from zero in every ``sql_mode`` (with a note), checked on MySQL 9.7.

:class:`NoDefault` means the definition has no ``DEFAULT``: :func:`implicit_default` then says what
MySQL gave existing rows. Guarded by the ``test_default_*`` and ``test_implicit_default_*`` tests in
``tests/unit/test_mysql_ddl_defaults.py`` and, against MySQL itself,
``test_added_columns_have_the_type_and_existing_row_values_the_parser_reads``.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
from dataclasses import dataclass
from typing import Any

from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.mysql.ddl.column_definitions import (
    ColumnDefinition,
    DeclaredType,
    DefaultClause,
)
from airflow_mysql_cdc.engine.mysql.normalise import select_normaliser
from airflow_mysql_cdc.engine.mysql.types import ColumnType


@dataclass(frozen=True)
class NoDefault:
    """The column definition has no ``DEFAULT`` clause (see :func:`implicit_default`)."""


@dataclass(frozen=True)
class LiteralDefault:
    """Every existing row holds ``value``: the canonical Python value, None for NULL."""

    value: Any


@dataclass(frozen=True)
class ExpressionDefault:
    """The existing rows' value is not known from the statement; ``text`` as written, ``reason`` why."""

    text: str
    reason: str = ""


ColumnDefault = NoDefault | LiteralDefault | ExpressionDefault


class _Uncertain(CdcError):
    """The literal's stored value depends on something the statement does not say."""


def column_default(definition: ColumnDefinition) -> ColumnDefault:
    """What the definition's ``DEFAULT`` clause gives existing rows (:class:`NoDefault` if it has none)."""
    column_type = definition.declared.column_type
    clause = definition.default
    if definition.auto_increment:
        return ExpressionDefault("AUTO_INCREMENT", "AUTO_INCREMENT numbers the existing rows")
    if clause is None:
        if column_type.kind == "timestamp" and definition.explicit_null:
            return LiteralDefault(None)  # TIMESTAMP NULL defaults to NULL whatever the settings
        return NoDefault()
    if clause.literal is None:
        return ExpressionDefault(clause.text, "an expression")
    if clause.literal.is_keyword("NULL"):
        return LiteralDefault(None)
    if definition.on_update:
        return ExpressionDefault(clause.text, "the column has ON UPDATE")
    try:
        return LiteralDefault(_canonical_literal(definition.declared, clause))
    except _Uncertain as uncertain:
        return ExpressionDefault(clause.text, str(uncertain))


def implicit_default(column_type: ColumnType, nullable: bool) -> ColumnDefault:
    """What MySQL gives existing rows for an added column without ``DEFAULT``.

    NULL when nullable; when NOT NULL the type's implicit default: 0 for numbers, YEAR and BIT, ''
    for text and SET, zero bytes of the fixed length for binary, the first member for ENUM.
    Temporal, JSON and spatial columns (zero dates, which the lake cannot hold; a JSON ``null``) and
    every TIMESTAMP (see the module docstring) are :class:`ExpressionDefault`.
    """
    kind = column_type.kind
    if kind == "timestamp":
        return ExpressionDefault(
            "implicit default of timestamp", "depends on explicit_defaults_for_timestamp"
        )
    if nullable:
        return LiteralDefault(None)
    if kind in ("int", "uint", "year", "bit"):
        return LiteralDefault(0)
    if kind == "decimal":
        return LiteralDefault(decimal.Decimal(0).scaleb(-column_type.scale))
    if kind in ("float", "double"):
        return LiteralDefault(0.0)
    if kind in ("text", "set"):
        return LiteralDefault("")
    if kind == "binary":
        return LiteralDefault(b"\x00" * column_type.fixed_length)
    if kind == "enum" and column_type.members:
        return LiteralDefault(column_type.members[0])
    return ExpressionDefault(f"implicit default of {kind}", "not a value the lake holds exactly")


_WHOLE = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_FLOATING = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?")
_TIME = re.compile(r"(-?)(\d{1,3}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?")
_MAX_TIME = datetime.timedelta(hours=838, minutes=59, seconds=59)
_DECIMAL_CONTEXT = decimal.Context(prec=100, rounding=decimal.ROUND_HALF_UP, traps=[decimal.InvalidOperation])
_PLAIN_INTRODUCERS = frozenset(("utf8mb4", "utf8mb3", "utf8", "latin1", "ascii", "binary"))
_INTEGER_RANGES = {
    ("int", bits): (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) for bits in (8, 16, 24, 32, 64)
} | {("uint", bits): (0, (1 << bits) - 1) for bits in (8, 16, 24, 32, 64)}


def _canonical_literal(declared: DeclaredType, clause: DefaultClause) -> Any:
    column_type = declared.column_type
    kind = column_type.kind
    if kind in ("int", "uint"):
        return _integer(column_type, clause)
    if kind == "decimal":
        return _decimal(column_type, clause)
    if kind in ("float", "double"):
        return _floating(declared, clause)
    if kind == "year":
        return _year(clause)
    if kind == "bit":
        return _bit(column_type, clause)
    if kind in ("text", "binary", "enum", "set"):
        return _character(declared, clause)
    if kind in ("date", "datetime", "time"):
        return _temporal(column_type, _plain_text(clause))
    if kind == "timestamp":
        raise _Uncertain("a TIMESTAMP literal is a time in the DDL session's time zone")
    raise _Uncertain(f"a literal default of a {kind} column")


def _numeric_text(clause: DefaultClause, pattern: re.Pattern[str]) -> str:
    """A number token or a string holding only a plain number, with the sign applied."""
    literal = clause.literal
    assert literal is not None
    if literal.kind == "number" and pattern.fullmatch(literal.value):
        return ("-" if clause.negative else "") + literal.value
    plain_string = literal.kind == "string" and clause.introducer is None and not literal.has_backslash
    if plain_string and pattern.fullmatch(literal.value):
        return literal.value
    raise _Uncertain("not the plain form of a number of this type")


def _integer(column_type: ColumnType, clause: DefaultClause) -> int:
    assert clause.literal is not None
    if clause.literal.is_keyword("TRUE", "FALSE"):
        return int(clause.literal.is_keyword("TRUE"))
    value = int(_numeric_text(clause, _WHOLE))
    low, high = _INTEGER_RANGES[(column_type.kind, column_type.bits)]
    if not low <= value <= high:
        raise _Uncertain("out of the column's range")
    return value


def _decimal(column_type: ColumnType, clause: DefaultClause) -> decimal.Decimal:
    """Rounded to the scale half away from zero, as MySQL stores it (with a note, in every sql_mode).

    The arithmetic runs with room for MySQL's 65 digits (the default context keeps 28).
    """
    value = decimal.Decimal(_numeric_text(clause, _DECIMAL))
    with decimal.localcontext(_DECIMAL_CONTEXT):
        try:
            rounded = value.quantize(decimal.Decimal(1).scaleb(-column_type.scale))
        except decimal.InvalidOperation as too_long:
            raise _Uncertain("out of the column's range") from too_long
        if abs(rounded) >= decimal.Decimal(10) ** (column_type.precision - column_type.scale):
            raise _Uncertain("out of the column's range")
    return abs(rounded) if rounded == 0 else rounded


def _floating(declared: DeclaredType, clause: DefaultClause) -> float:
    if declared.scaled:
        raise _Uncertain("FLOAT(M,D) and DOUBLE(M,D) round values to D decimals")
    value = float(_numeric_text(clause, _FLOATING))
    if value == 0 and math.copysign(1.0, value) < 0:
        raise _Uncertain("a negative zero")
    if declared.column_type.kind == "float":
        try:
            normalise = select_normaliser(declared.column_type)
            assert normalise is not None  # FLOAT has one: the rounding MySQL's text applies
            value = normalise(value)
        except OverflowError as overflow:
            raise _Uncertain("out of FLOAT's range") from overflow
    if not math.isfinite(value):
        raise _Uncertain("out of the column's range")
    return value


def _year(clause: DefaultClause) -> int:
    literal = clause.literal
    assert literal is not None
    if clause.negative:
        raise _Uncertain("a negative year")
    text = _numeric_text(clause, re.compile(r"\d{4}" if literal.kind == "string" else r"\d+"))
    value = int(text)
    if value == 0 and (literal.kind == "number" or text == "0000"):
        return 0  # the number 0 and the text '0000' are the year 0000; the text '0' is 2000
    if 1901 <= value <= 2155 and len(text) == 4:
        return value
    raise _Uncertain("a two-digit or out-of-range year")


def _bit(column_type: ColumnType, clause: DefaultClause) -> int:
    literal = clause.literal
    assert literal is not None
    if literal.kind == "bits":
        value = int(literal.value or "0", 2)
    elif literal.kind == "hex":
        value = int(literal.value or "0", 16)
    elif literal.kind == "number" and literal.value.isdigit() and not clause.negative:
        value = int(literal.value)
    else:
        raise _Uncertain("not a bit, hexadecimal or whole number literal")
    if value >= 1 << column_type.bits:
        raise _Uncertain("wider than the column")
    return value


def _plain_text(clause: DefaultClause) -> str:
    """A string literal's text when it means the same characters on every connection."""
    literal = clause.literal
    assert literal is not None
    if literal.kind != "string":
        raise _Uncertain("not a quoted text")
    if literal.has_backslash:
        raise _Uncertain("a backslash reads differently under NO_BACKSLASH_ESCAPES")
    if clause.introducer is not None and clause.introducer not in _PLAIN_INTRODUCERS:
        raise _Uncertain(f"the character set introducer _{clause.introducer}")
    return literal.value


def _character(declared: DeclaredType, clause: DefaultClause) -> Any:
    column_type = declared.column_type
    literal = clause.literal
    assert literal is not None
    if column_type.kind == "binary" and literal.kind == "hex":
        data = bytes.fromhex(literal.value if len(literal.value) % 2 == 0 else "0" + literal.value)
    else:
        text = _plain_text(clause)
        if column_type.kind == "enum":
            if text not in column_type.members:
                raise _Uncertain("not exactly one of the members")
            return text
        if column_type.kind == "set":
            chosen = set(text.split(",")) if text else set()
            if not chosen <= set(column_type.members):
                raise _Uncertain("not exactly members of the set")
            return ",".join(member for member in column_type.members if member in chosen)
        if not text.isascii():
            raise _Uncertain("non-ASCII text depends on the connection's character set")
        if column_type.kind == "text":
            return _sized_text(declared, text)
        data = text.encode("ascii")
    if declared.base not in ("BINARY", "VARBINARY"):
        raise _Uncertain("a BLOB column cannot have a literal default")
    if len(data) > (declared.length or 0):
        raise _Uncertain("longer than the column")
    return data.ljust(column_type.fixed_length, b"\x00")


def _sized_text(declared: DeclaredType, text: str) -> str:
    if declared.base not in ("CHAR", "VARCHAR"):
        raise _Uncertain("a TEXT column cannot have a literal default")
    if len(text) > (declared.length or 0):
        raise _Uncertain("longer than the column")
    if declared.base == "CHAR" and text.endswith(" "):
        raise _Uncertain("CHAR drops trailing spaces depending on sql_mode")
    return text


def _temporal(column_type: ColumnType, text: str) -> Any:
    kind = column_type.kind
    pattern = {"date": _DATE, "datetime": _DATETIME, "time": _TIME}[kind]
    match = pattern.fullmatch(text)
    if match is None:
        raise _Uncertain(f"not the plain form of a {kind}")
    parts = match.groups()
    try:
        if kind == "date":
            return datetime.date(*map(int, parts))
        microseconds = _fraction(parts[-1], column_type.fsp)
        if kind == "datetime":
            year, month, day = (int(part) for part in parts[:3])
            hour, minute, second = (int(part or 0) for part in parts[3:6])
            return datetime.datetime(year, month, day, hour, minute, second, microseconds)
    except ValueError as invalid:
        raise _Uncertain(f"a zero or invalid {kind}") from invalid
    sign, hours, minutes, seconds = parts[0], int(parts[1]), int(parts[2]), int(parts[3])
    if minutes > 59 or seconds > 59:
        raise _Uncertain("an invalid time")
    value = datetime.timedelta(hours=hours, minutes=minutes, seconds=seconds, microseconds=microseconds)
    if value > _MAX_TIME:
        raise _Uncertain("out of TIME's range")
    return -value if sign else value


def _fraction(digits: str | None, fsp: int) -> int:
    """Microseconds of a fraction the column keeps whole; digits beyond ``fsp`` must be zeros."""
    digits = digits or ""
    if digits[fsp:].strip("0"):
        raise _Uncertain("more fractional digits than the column keeps (MySQL rounds)")
    return int(digits.ljust(6, "0"))
