"""The batch applier at DDL (pure logic, in-memory sink): the batch before a DDL is committed first,
the DDL is applied alone at its own position, and a table that left is dropped from every later row."""

from __future__ import annotations

from airflow_mysql_cdc.engine.apply.batches import BatchApplier
from airflow_mysql_cdc.engine.apply.config import ApplyResult
from airflow_mysql_cdc.engine.apply.schema_changes import SchemaChanges
from airflow_mysql_cdc.engine.binlog.changes import SchemaChange, TableShape, Transaction
from airflow_mysql_cdc.engine.lake.delta_layout import source_columns_schema
from airflow_mysql_cdc.engine.mysql.schema import TableMetadata, TableRef
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.runtime.gc_pause import BatchCollector
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import Gtid
from tests.unit.sink_fixtures import (
    BASE_US,
    ITEMS,
    ORDERS,
    SOURCE_UUID,
    RecordingSink,
    insert,
    through,
    transaction,
)

ORDERS_WITH_NOTE = TableShape("shop", "orders", (*ORDERS.columns, ColumnType("note", "text")), ("id",))
ORDERS_RETYPED = TableShape(
    "shop",
    "orders",
    (ColumnType("id", "int", bits=64), ColumnType("status", "int", bits=32), ORDERS.columns[2]),
    ("id",),
)


class _SchemaChangesWithoutServer(SchemaChanges):
    """The real decisions; ``information_schema`` answered from a dict (None: the table is gone)."""

    def __init__(self, sink: RecordingSink, result: ApplyResult) -> None:
        super().__init__(sink, MySqlEndpoint("127.0.0.1", 9), (), None, result.schema_changes.append)
        self.now: dict[str, TableMetadata | None] = {}

    def _metadata(self, ref: TableRef) -> TableMetadata | None:
        return self.now.get(str(ref))


def _ddl(number: int, statement: str, *tables: str) -> Transaction:
    return Transaction(
        Gtid(SOURCE_UUID, number), BASE_US + number * 1_000_000, (), SchemaChange(statement, "shop", tables)
    )


def _sink_with_lake_tables() -> RecordingSink:
    sink = RecordingSink(through(2))
    for shape in (ORDERS, ITEMS):
        sink.fields[shape.qualified_name] = {f.name: f.type for f in source_columns_schema(shape.columns)}
    sink.record_members({"shop.orders": "s1", "shop.items": "s2"})
    return sink


def _applier(sink: RecordingSink) -> BatchApplier:
    resume_from = sink.open(through(2))
    result = ApplyResult.starting("p", resume_from, resume_from)
    schema_changes = _SchemaChangesWithoutServer(sink, result)
    return BatchApplier(sink, resume_from, result, None, BatchCollector(), None, schema_changes)


def test_the_batch_before_a_ddl_is_committed_first_and_the_ddl_alone_at_its_position() -> None:
    sink = _sink_with_lake_tables()
    applier = _applier(sink)
    applier.add(transaction(3, insert(ORDERS, {"id": 1, "status": "a", "qty": 1})))
    applier.add(transaction(4, insert(ITEMS, {"sku": "x", "price": 1.0})))
    applier.add(_ddl(5, "ALTER TABLE orders ADD COLUMN note VARCHAR(10) NULL", "shop.orders"))
    assert [position for _, position in sink.batches] == [through(4)]  # flushed before the DDL
    [(gtid, evolutions, position)] = sink.schema_changes
    assert (gtid, position) == (f"{SOURCE_UUID}:5", through(5))
    assert [(e.table, e.action, e.added) for e in evolutions] == [("shop.orders", "evolve", ("note",))]
    applier.add(transaction(6, insert(ORDERS_WITH_NOTE, {"id": 2, "status": "b", "qty": 2, "note": "n"})))
    applier.flush()
    assert [position for _, position in sink.batches] == [through(4), through(6)]
    assert [(e.gtid, e.table, e.action) for e in applier.result.schema_changes] == [
        (f"{SOURCE_UUID}:5", "shop.orders", "evolve")
    ]
    assert applier.result.to_resnapshot == []


def test_later_rows_of_a_table_that_left_are_dropped_and_the_position_still_moves() -> None:
    sink = _sink_with_lake_tables()
    applier = _applier(sink)
    applier.add(_ddl(3, "DROP TABLE items", "shop.items"))
    applier.add(
        transaction(
            4,
            insert(ITEMS, {"sku": "late", "price": 2.0}),
            insert(ORDERS, {"id": 1, "status": "a", "qty": 1}),
        )
    )
    applier.flush()
    assert [e.action for _, evolutions, _ in sink.schema_changes for e in evolutions] == ["leave"]
    assert sink.members == {"shop.orders": "s1"}
    assert [position for _, position in sink.batches] == [through(4)]
    assert applier.result.rows_by_table == {"shop.orders": 1}  # the dropped table's row is not applied
    assert applier.result.to_resnapshot == []  # left for good: nothing to snapshot


def test_rows_with_columns_the_lake_lacks_take_their_table_out_for_a_snapshot_before_them() -> None:
    sink = _sink_with_lake_tables()
    applier = _applier(sink)
    applier.add(transaction(3, insert(ORDERS, {"id": 1, "status": "a", "qty": 1})))
    applier.add(transaction(4, insert(ORDERS_RETYPED, {"id": 2, "status": 7, "qty": 2})))
    applier.flush()
    [(gtid, evolutions, position)] = sink.schema_changes
    assert (gtid, position) == (f"{SOURCE_UUID}:4", through(3))  # left before the transaction
    assert [(e.table, e.action) for e in evolutions] == [("shop.orders", "resnapshot")]
    assert [position for _, position in sink.batches] == [through(3), through(4)]
    assert applier.result.rows_by_table == {"shop.orders": 1}
    assert applier.result.to_resnapshot == ["shop.orders"]
