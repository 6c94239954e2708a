"""The change buffer keeps memory under its budget by spilling, without changing what is read."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.binlog.backpressure import ChangeBuffer, SpilledChanges, estimated_bytes
from airflow_mysql_cdc.engine.binlog.changes import Op, RowChange, TableShape
from airflow_mysql_cdc.engine.mysql.types import ColumnType

SHAPE = TableShape("db", "t", (ColumnType("id", "int", bits=32),), ("id",))


def change(row_id: int) -> RowChange:
    return RowChange(SHAPE, Op.INSERT, None, {"id": row_id}, (row_id,))


def test_small_transactions_stay_in_memory():
    buffer = ChangeBuffer(max_buffered_bytes=10_000)
    buffer.add([change(1), change(2)], 100)
    changes = buffer.finish()
    assert list(changes) == [change(1), change(2)] and not isinstance(changes, SpilledChanges)


def test_a_transaction_over_budget_spills_and_reads_back_in_order_any_number_of_times():
    buffer = ChangeBuffer(max_buffered_bytes=1_000)
    for batch in range(10):
        buffer.add([change(batch * 3 + i) for i in range(3)], 400)
    changes = buffer.finish()
    assert isinstance(changes, SpilledChanges) and changes.spilled
    assert len(changes) == 30
    assert list(changes) == [change(i) for i in range(30)]
    assert list(changes) == [change(i) for i in range(30)]
    assert buffer.peak_bytes <= 1_000
    changes.close()


def test_one_event_larger_than_the_budget_is_still_accepted():
    buffer = ChangeBuffer(max_buffered_bytes=100)
    buffer.add([change(1)], 5_000)
    buffer.add([change(2)], 5_000)
    assert list(buffer.finish()) == [change(1), change(2)]


def test_discard_forgets_the_open_transaction():
    buffer = ChangeBuffer(max_buffered_bytes=100)
    buffer.add([change(1)], 500)
    buffer.add([change(2)], 500)
    buffer.discard()
    assert not buffer.has_changes() and list(buffer.finish()) == []


def test_budget_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        ChangeBuffer(0)


def test_estimate_grows_with_changes_and_columns():
    assert estimated_bytes(100, 0, 10) == 100
    assert estimated_bytes(100, 10, 20) > estimated_bytes(100, 10, 2) > estimated_bytes(100, 1, 2)
