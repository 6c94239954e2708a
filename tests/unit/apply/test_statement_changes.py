"""The batch applier at a statement-logged change (pure logic, in-memory sink): per table, nothing
(it left, or its snapshot holds the GTID), a stop after committing what came before, or a departure
before the transaction for a re-snapshot while the other tables' rows apply."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from airflow_mysql_cdc.engine.apply.batches import BatchApplier
from airflow_mysql_cdc.engine.apply.config import ApplyResult, StatementChangeMode
from airflow_mysql_cdc.engine.apply.schema_changes import SchemaChanges
from airflow_mysql_cdc.engine.apply.statement_changes import StatementChanges
from airflow_mysql_cdc.engine.binlog.changes import StatementChange, Transaction
from airflow_mysql_cdc.engine.binlog.errors import StatementBasedChangeError
from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.lake.delta_layout import source_columns_schema
from airflow_mysql_cdc.engine.runtime.gc_pause import BatchCollector
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.unit.sink_fixtures import ITEMS, ORDERS, SOURCE_UUID, RecordingSink, insert, through, transaction

UPDATE = "UPDATE orders SET status = 'x' WHERE id < 10"


def _sink() -> RecordingSink:
    sink = RecordingSink(through(2))
    for shape in (ORDERS, ITEMS):
        sink.fields[shape.qualified_name] = {f.name: f.type for f in source_columns_schema(shape.columns)}
    sink.record_members({"shop.orders": "s1", "shop.items": "s2"})
    return sink


def _snapshot_of_orders(*chunk_high_watermarks: GtidSet) -> SimpleNamespace:
    """A snapshot filter whose ``shop.orders`` snapshot has chunks with these high watermarks."""
    chunks = [SimpleNamespace(high_watermark=high) for high in chunk_high_watermarks]
    union = GtidSet()
    for high in chunk_high_watermarks:
        union = union | high
    return SimpleNamespace(indexes={"shop.orders": SimpleNamespace(union_high=union, chunks=chunks)})


def _applier(sink: RecordingSink, mode: StatementChangeMode, snapshot_filter: object = None) -> BatchApplier:
    resume_from = sink.open(through(2))
    result = ApplyResult.starting("p", resume_from, resume_from)
    schema_changes = SchemaChanges(
        sink,
        MySqlEndpoint("127.0.0.1", 9),
        (),
        snapshot_filter,
        result.schema_changes.append,  # type: ignore[arg-type]
    )
    return BatchApplier(
        sink, resume_from, result, None, BatchCollector(), None, schema_changes,
        statement_changes=StatementChanges(mode, schema_changes),
    )  # fmt: skip


def _by_statement(number: int, *rows, statement: str = UPDATE, tables=("shop.orders",)) -> Transaction:
    plain = transaction(number, *rows)
    return Transaction(
        plain.gtid,
        plain.commit_timestamp_us,
        plain.changes,
        None,
        (StatementChange(statement, "shop", tables),),
    )


def test_stop_commits_what_came_before_then_fails_naming_table_gtid_statement_and_the_ways_out() -> None:
    sink = _sink()
    applier = _applier(sink, "stop")
    applier.add(transaction(3, insert(ORDERS, {"id": 1, "status": "a", "qty": 1})))

    with pytest.raises(StatementBasedChangeError) as raised:
        applier.add(_by_statement(4))

    assert [position for _, position in sink.batches] == [through(3)]
    error = raised.value
    assert (error.tables, error.gtid, error.position) == (("shop.orders",), f"{SOURCE_UUID}:4", through(3))
    assert error.exit_code is ExitCode.BINLOG and not error.retryable
    message = str(error)
    for part in (
        "shop.orders",
        f"{SOURCE_UUID}:4",
        UPDATE,
        "statement_changes: resnapshot",
        "re-snapshot the table",
    ):
        assert part in message
    assert "binlog_format=STATEMENT or MIXED" in message and "SESSION_VARIABLES_ADMIN" in message


def test_resnapshot_takes_the_table_out_before_the_transaction_and_applies_the_others_rows() -> None:
    sink = _sink()
    applier = _applier(sink, "resnapshot")
    applier.add(transaction(3, insert(ORDERS, {"id": 1, "status": "a", "qty": 1})))
    applier.add(_by_statement(4, insert(ITEMS, {"sku": "x", "price": 1.0})))
    applier.add(transaction(5, insert(ORDERS, {"id": 2, "status": "b", "qty": 2})))
    applier.flush()

    [(gtid, evolutions, position)] = sink.schema_changes
    assert (gtid, position) == (f"{SOURCE_UUID}:4", through(3))  # it left before the transaction
    assert [(e.table, e.action) for e in evolutions] == [("shop.orders", "resnapshot")]
    assert "statement-logged UPDATE" in evolutions[0].reason
    assert sink.members == {"shop.items": "s2"}
    assert [position for _, position in sink.batches] == [through(3), through(5)]
    assert applier.result.rows_by_table == {"shop.orders": 1, "shop.items": 1}  # orders' later row dropped
    assert applier.result.to_resnapshot == ["shop.orders"]
    # The replicate task's log line, from the result read back: a statement, not a schema change.
    [told] = ApplyResult.from_dict(applier.result.to_dict()).schema_changes
    assert told.describe() == (
        f"Statement-logged change {SOURCE_UUID}:4: shop.orders left the pipeline to be snapshotted again: "
        "changed by a statement-logged UPDATE (a session with binlog_format=STATEMENT or MIXED): its "
        "rows are not in the binlog"
    )


def test_a_table_whose_every_snapshot_chunk_holds_the_gtid_passes_the_statement() -> None:
    sink = _sink()
    applier = _applier(sink, "stop", _snapshot_of_orders(through(3), through(6)))
    applier.add(_by_statement(3))
    applier.add(transaction(4, insert(ORDERS, {"id": 2, "status": "b", "qty": 2})))
    applier.flush()

    assert sink.schema_changes == []
    assert [position for _, position in sink.batches] == [through(4)]


def test_a_snapshot_that_holds_the_gtid_in_only_some_chunks_does_not_pass_it() -> None:
    sink = _sink()
    applier = _applier(sink, "stop", _snapshot_of_orders(through(2), through(3)))
    with pytest.raises(StatementBasedChangeError):
        applier.add(_by_statement(3))


def test_a_table_that_already_left_ignores_later_statements() -> None:
    sink = _sink()
    applier = _applier(sink, "resnapshot")
    applier.add(_by_statement(3))
    applier.add(_by_statement(4, statement="DELETE FROM orders"))
    applier.flush()

    assert len(sink.schema_changes) == 1
    assert applier.result.to_resnapshot == ["shop.orders"]


def test_an_applier_without_a_statement_policy_stops() -> None:
    sink = _sink()
    resume_from = sink.open(through(2))
    applier = BatchApplier(
        sink, resume_from, ApplyResult.starting("p", resume_from, resume_from), None, BatchCollector()
    )
    with pytest.raises(StatementBasedChangeError, match="shop.orders"):
        applier.add(_by_statement(3))
