"""The one batch applier that the single reader and parallel catch-up share (pure logic, in-memory sink)."""

from __future__ import annotations

from airflow_mysql_cdc.engine.apply.batches import BatchApplier
from airflow_mysql_cdc.engine.apply.config import ApplyResult
from airflow_mysql_cdc.engine.lake.change_table import build_change_tables
from airflow_mysql_cdc.engine.lake.sink import Sink
from airflow_mysql_cdc.engine.runtime.gc_pause import BatchCollector
from tests.unit.sink_fixtures import ITEMS, ORDERS, RecordingSink, insert, through, transaction, update


def _applier(sink: Sink, resume_from, on_batch=None) -> BatchApplier:
    result = ApplyResult.starting("p", resume_from, resume_from)
    return BatchApplier(sink, resume_from, result, None, BatchCollector(), on_batch)


def _history():
    return [
        transaction(3, insert(ORDERS, {"id": 1, "status": "new", "qty": 1})),
        transaction(
            4, update(ORDERS, {"id": 1, "status": "new", "qty": 1}, {"id": 1, "status": "paid", "qty": 1})
        ),
        transaction(5, insert(ITEMS, {"sku": "a", "price": 1.5})),
    ]


def test_each_batch_records_the_resume_point_and_every_gtid_fed_before_it() -> None:
    sink = RecordingSink(through(2))
    reported = []
    applier = _applier(
        sink, sink.open(through(2)), lambda number, position: reported.append((number, position))
    )
    first, second, third = _history()
    applier.add(first)
    applier.add(second)
    applier.flush()
    applier.add(third)
    applier.flush()
    assert [(len(gtids), position) for gtids, position in sink.batches] == [(2, through(4)), (1, through(5))]
    assert reported == [(1, through(4)), (2, through(5))]
    assert (applier.result.transactions, applier.result.batches) == (3, 2)
    assert applier.result.rows_by_table == {"shop.orders": 2, "shop.items": 1}
    assert applier.result.last_commit_timestamp_us == third.commit_timestamp_us


def test_a_batch_that_brings_the_sink_nothing_new_is_not_applied() -> None:
    sink = RecordingSink(through(5))
    applier = _applier(sink, sink.open(through(5)))
    applier.flush()
    assert sink.batches == [] and applier.result.batches == 0


def test_a_wave_of_change_tables_is_one_batch_at_the_position_of_its_transactions() -> None:
    history = _history()
    by_rows, by_wave = RecordingSink(through(2)), RecordingSink(through(2))
    rows_applier = _applier(by_rows, by_rows.open(through(2)))
    for one in history:
        rows_applier.add(one)
    rows_applier.flush()
    wave_applier = _applier(by_wave, by_wave.open(through(2)))
    marks = [(str(one.gtid), one.commit_timestamp_us) for one in history]
    wave_applier.apply_change_tables(marks, build_change_tables(history))
    assert [position for _, position in by_wave.batches] == [through(5)]
    assert by_wave.applied_gtids == by_rows.applied_gtids == through(5)
    for field in ("transactions", "batches", "rows_by_table", "last_commit_timestamp_us"):
        assert getattr(wave_applier.result, field) == getattr(rows_applier.result, field), field
