"""Hand-built transactions for sink tests (the binlog reader's tests prove real ones look alike)."""

from __future__ import annotations

from typing import Any

from airflow_mysql_cdc.engine.binlog.changes import Op, RowChange, TableShape, Transaction
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet

SOURCE_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
BASE_US = 1_790_000_000_000_000

ORDERS = TableShape(
    "shop",
    "orders",
    (ColumnType("id", "int", bits=64), ColumnType("status", "text"), ColumnType("qty", "uint", bits=32)),
    ("id",),
)
ITEMS = TableShape("shop", "items", (ColumnType("sku", "text"), ColumnType("price", "double")), ("sku",))


def insert(shape: TableShape, row: dict[str, Any]) -> RowChange:
    return RowChange(shape, Op.INSERT, None, row, tuple(row[c] for c in shape.primary_key))


def update(shape: TableShape, before: dict[str, Any], after: dict[str, Any]) -> RowChange:
    return RowChange(shape, Op.UPDATE, before, after, tuple(after[c] for c in shape.primary_key))


def delete(shape: TableShape, row: dict[str, Any]) -> RowChange:
    return RowChange(shape, Op.DELETE, row, None, tuple(row[c] for c in shape.primary_key))


def transaction(number: int, *changes: RowChange) -> Transaction:
    return Transaction(Gtid(SOURCE_UUID, number), BASE_US + number * 1_000_000, tuple(changes))


def through(number: int) -> GtidSet:
    return GtidSet.parse(f"{SOURCE_UUID}:1-{number}") if number else GtidSet()
