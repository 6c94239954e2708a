"""Chunk bounds as JSON that round-trips exactly (they are stored in Delta commit metadata).

Key values are canonical Python values (:mod:`airflow_mysql_cdc.engine.mysql.types`); JSON has no
bytes, decimals or dates, so each non-JSON value is tagged with its type.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any


def encode_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str | float):
        return value
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    if isinstance(value, decimal.Decimal):
        return {"decimal": str(value)}
    if isinstance(value, datetime.datetime):
        return {"datetime": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"date": value.isoformat()}
    if isinstance(value, datetime.timedelta):
        return {"timedelta_us": value // datetime.timedelta(microseconds=1)}
    raise TypeError(f"cannot encode key value of type {type(value).__name__}")


def decode_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    ((kind, text),) = value.items()
    if kind == "bytes":
        return bytes.fromhex(text)
    if kind == "decimal":
        return decimal.Decimal(text)
    if kind == "datetime":
        return datetime.datetime.fromisoformat(text)
    if kind == "date":
        return datetime.date.fromisoformat(text)
    if kind == "timedelta_us":
        return datetime.timedelta(microseconds=text)
    raise ValueError(f"unknown key value tag {kind!r}")


def encode_key(key: tuple[Any, ...] | None) -> list[Any] | None:
    return None if key is None else [encode_value(value) for value in key]


def decode_key(key: list[Any] | None) -> tuple[Any, ...] | None:
    return None if key is None else tuple(decode_value(value) for value in key)
