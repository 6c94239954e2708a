"""The value MySQL gives rows that existed before ``ADD COLUMN``: a literal DEFAULT, or not knowable.

Invariant: :class:`LiteralDefault` holds the *canonical* value (:mod:`.normalise`) a snapshot of
the table would read for such a row, so the lake stores it exactly as it stores every row. A
default MySQL computes (``CURRENT_TIMESTAMP``, ``(expr)``, a function), a ``TIMESTAMP`` literal (read
in the DDL session's time zone, which the binlog does not carry), and any literal this module is
not sure how MySQL converts (``'5.7'`` for an INT rounds, a two-digit YEAR, an ENUM index) is an
:class:`ExpressionDefault`: the engine re-snapshots the table rather than guess.
"""

from __future__ import annotations

import datetime
import decimal
import re
import struct
from dataclasses import dataclass
from typing import Any

from airflow_mysql_cdc.engine.mysql.ddl_tokens import Token
from airflow_mysql_cdc.engine.mysql.types import ColumnType


@dataclass(frozen=True)
class NoDefault:
    """No DEFAULT clause: MySQL's implicit default applies (:func:`implicit_default`)."""


@dataclass(frozen=True)
class LiteralDefault:
    value: Any  # canonical; None for NULL


@dataclass(frozen=True)
class ExpressionDefault:
    text: str


ColumnDefault = NoDefault | LiteralDefault | ExpressionDefault
_INTEGER = re.compile(r"[-+]?\d+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?")
_FLOAT32 = struct.Struct("<f")


def implicit_default(column: ColumnType, nullable: bool) -> ColumnDefault:
    """What existing rows get for an added column without a DEFAULT clause."""
    if nullable:
        return LiteralDefault(None)
    zero: dict[str, Any] = {"int": 0, "uint": 0, "year": 0, "bit": 0, "float": 0.0, "double": 0.0, "text": ""}
    if column.kind in zero:
        return LiteralDefault(zero[column.kind])
    if column.kind == "decimal":
        return LiteralDefault(decimal.Decimal(0).scaleb(-column.scale))
    if column.kind == "binary":
        return LiteralDefault(b"\0" * column.fixed_length)
    if column.kind == "enum" and column.members:
        return LiteralDefault(column.members[0])
    if column.kind == "set":
        return LiteralDefault("")
    return ExpressionDefault(f"the implicit default of a NOT NULL {column.kind} column")


def default_value(column: ColumnType, tokens: list[Token], at: int) -> tuple[ColumnDefault, int]:
    """The DEFAULT clause's value starting at ``tokens[at]``, and the position after it."""
    token = tokens[at]
    sign = ""
    if token.text in ("-", "+") and at + 1 < len(tokens) and tokens[at + 1].kind == "number":
        sign, at = token.text, at + 1
        token = tokens[at]
    introducer = token.kind == "word" and token.value.startswith("_")  # _utf8mb4'text'
    if introducer and at + 1 < len(tokens) and tokens[at + 1].kind == "string":
        at += 1
        token = tokens[at]
    if token.is_word("NULL"):
        return LiteralDefault(None), at + 1
    if token.is_word("TRUE", "FALSE"):
        return _converted(column, "1" if token.is_word("TRUE") else "0", "number"), at + 1
    if token.kind in ("number", "string", "bits", "hex"):
        return _converted(column, sign + token.value, token.kind), at + 1
    if token.text == "(":  # (expr)
        end = _past_parentheses(tokens, at)
    elif at + 1 < len(tokens) and tokens[at + 1].text == "(":  # CURRENT_TIMESTAMP(6), NOW()
        end = _past_parentheses(tokens, at + 1)
    else:
        end = at + 1
    return ExpressionDefault(" ".join(t.text for t in tokens[at:end])), end


def _past_parentheses(tokens: list[Token], at: int) -> int:
    """The position after the parenthesised group opening at ``tokens[at]``."""
    depth = 0
    while True:
        depth += {"(": 1, ")": -1}.get(tokens[at].text, 0)
        at += 1
        if depth == 0:
            return at


def _converted(column: ColumnType, text: str, kind: str) -> ColumnDefault:
    try:
        value = _canonical(column, text, kind)
    except (ValueError, ArithmeticError, TypeError) as error:
        return ExpressionDefault(f"{text!r} for a {column.kind} column ({error})")
    if value is _UNSURE:
        return ExpressionDefault(f"{text!r} for a {column.kind} column")
    return LiteralDefault(value)


_UNSURE = object()


def _canonical(column: ColumnType, text: str, kind: str) -> Any:
    """The canonical value of a literal, or ``_UNSURE`` where MySQL's conversion is not certain here."""
    if kind == "bits":
        return int(text[2:-1] or "0", 2) if column.kind == "bit" else _UNSURE
    if kind == "hex":
        digits = text[2:-1] if text[1] == "'" else text[2:]
        if column.kind == "binary":
            return bytes.fromhex(digits).ljust(column.fixed_length, b"\0")
        return int(digits, 16) if column.kind == "bit" else _UNSURE
    if column.kind in ("int", "uint", "year"):
        if not _INTEGER.fullmatch(text) or (column.kind == "year" and len(text.lstrip("+-")) != 4):
            return _UNSURE
        return int(text)
    if column.kind == "bit":
        return int(text) if kind == "number" and _INTEGER.fullmatch(text) else _UNSURE
    if column.kind == "decimal":
        value = decimal.Decimal(text)
        quantised = value.quantize(decimal.Decimal(1).scaleb(-column.scale), rounding=decimal.ROUND_HALF_UP)
        if quantised != value or len(quantised.as_tuple().digits) > max(column.precision, 1):
            return _UNSURE  # MySQL rounds or refuses; not worth guessing
        return quantised
    if column.kind == "float":
        return _FLOAT32.unpack(_FLOAT32.pack(float(text)))[0]
    if column.kind == "double":
        return float(text)
    if column.kind == "text":
        return text if kind == "string" else _UNSURE
    if column.kind == "binary":
        return text.encode().ljust(column.fixed_length, b"\0") if kind == "string" else _UNSURE
    if column.kind == "enum":
        return _member(column, text) if kind == "string" else _UNSURE
    if column.kind == "set":
        if kind != "string":
            return _UNSURE
        chosen = {_member(column, part) for part in text.split(",")} if text else set()
        return _UNSURE if _UNSURE in chosen else ",".join(m for m in column.members if m in chosen)
    if column.kind == "date" and kind == "string":
        return (
            datetime.date.fromisoformat(text) if _DATE.fullmatch(text) and text != "0000-00-00" else _UNSURE
        )
    if column.kind == "datetime" and kind == "string":
        match = _DATETIME.fullmatch(text)
        if not match or len(match.group(3) or "") > column.fsp:
            return _UNSURE
        return datetime.datetime.fromisoformat(
            f"{match.group(1)} {match.group(2)}.{(match.group(3) or '').ljust(6, '0')}"
        )
    return _UNSURE  # timestamp (session time zone), time, json, geometry


def _member(column: ColumnType, text: str) -> Any:
    """The member MySQL stores for ``text`` (compared without case, as the usual collations do)."""
    for member in column.members:
        if member == text:
            return member
    matches = [member for member in column.members if member.lower() == text.lower()]
    return matches[0] if len(matches) == 1 else _UNSURE
