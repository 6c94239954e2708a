"""The operators' figures as metrics, with Airflow's stats backend replaced by a recorder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from airflow_mysql_cdc.engine.apply.config import ApplyResult
from airflow_mysql_cdc.engine.lake.evolution import TableEvolution
from airflow_mysql_cdc.engine.lake.maintenance.report import MaintenanceReport
from airflow_mysql_cdc.engine.lake.maintenance.report import TableReport as MaintainedTableReport
from airflow_mysql_cdc.engine.snapshot.result import SnapshotResult
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.verify.report import TableReport, VerifyReport
from airflow_mysql_cdc.operators import metrics
from tests.support.stats_recorder import Recorder, recording_stats


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    with recording_stats() as backend:
        yield backend


def test_an_application_emits_rows_per_table_transactions_lag_and_binlog_bytes(recorder: Recorder) -> None:
    result = ApplyResult(
        pipeline_id="shop",
        requested_start=GtidSet(),
        resumed_from=GtidSet(),
        end_gtids=GtidSet(),
        transactions=5,
        rows_by_table={"shop.orders": 40, "shop.customers": 2},
        transactions_by_table={"shop.orders": 5, "shop.customers": 1},
        duration_s=2.5,
        lag_s=1.25,
        binlog_bytes_read=8192,
    )
    metrics.emit_apply(result, ["shop.orders", "shop.customers", "shop.refunds"])

    calls = {(kind, name): (value, tags) for kind, name, value, tags in recorder.calls}
    assert calls[("incr", "mysql_cdc.apply.transactions")] == (5, {"pipeline": "shop"})
    tagged_rows = [(value, tags) for _, name, value, tags in recorder.calls if name == "mysql_cdc.apply.rows"]
    assert tagged_rows == [
        (2, {"pipeline": "shop", "table": "shop.customers"}),
        (40, {"pipeline": "shop", "table": "shop.orders"}),
        (0, {"pipeline": "shop", "table": "shop.refunds"}),  # no change: 0, its series goes on
    ]
    name_wanted = "mysql_cdc.apply.table_transactions"
    per_table = [(value, tags) for _, name, value, tags in recorder.calls if name == name_wanted]
    assert per_table == [
        (1, {"pipeline": "shop", "table": "shop.customers"}),
        (5, {"pipeline": "shop", "table": "shop.orders"}),
        (0, {"pipeline": "shop", "table": "shop.refunds"}),
    ]
    assert calls[("incr", "mysql_cdc.apply.table_transactions.shop.shop__orders")] == (5, None)
    assert calls[("incr", "mysql_cdc.apply.rows.shop.shop__orders")] == (40, None)
    assert calls[("incr", "mysql_cdc.apply.rows.shop.shop__customers")] == (2, None)
    assert calls[("gauge", "mysql_cdc.apply.lag_seconds")] == (1.25, {"pipeline": "shop"})
    assert calls[("timing", "mysql_cdc.apply.duration")] == (2500.0, {"pipeline": "shop"})
    assert calls[("incr", "mysql_cdc.binlog.bytes_read")] == (8192, {"pipeline": "shop"})
    assert calls[("incr", "mysql_cdc.binlog.bytes_read.shop")] == (8192, None)


def test_a_stopped_table_is_counted_once_and_shown_every_run_until_re_snapshotted(recorder: Recorder) -> None:
    """The run that stops it counts a stop; it and every later run set the gauge to 1 (0 for others)."""
    stopping = ApplyResult("shop", GtidSet(), GtidSet(), GtidSet())
    stopping.record_stop(TableEvolution.stopping("shop.orders", "its target was changed by another writer"))
    later = ApplyResult("shop", GtidSet(), GtidSet(), GtidSet(), stopped_tables=dict(stopping.stopped_tables))
    for result in (stopping, later):
        recorder.calls.clear()
        metrics.emit_apply(result, ["shop.orders", "shop.customers"])
        values = {(name, (tags or {}).get("table")): value for _, name, value, tags in recorder.calls if tags}
        assert values[("mysql_cdc.apply.table_stopped", "shop.orders")] == 1
        assert values[("mysql_cdc.apply.table_stopped", "shop.customers")] == 0
        assert values[("mysql_cdc.apply.table_stops", "shop.orders")] == (1 if result is stopping else 0)
        assert values[("mysql_cdc.apply.table_stops", "shop.customers")] == 0


def test_an_idle_application_sets_no_lag(recorder: Recorder) -> None:
    metrics.emit_apply(ApplyResult("shop", GtidSet(), GtidSet(), GtidSet(), lag_s=9.0), ["shop.orders"])
    assert "mysql_cdc.apply.lag_seconds" not in {name for _, name, _, _ in recorder.calls}


def test_snapshot_maintenance_and_verify_figures(recorder: Recorder) -> None:
    metrics.emit_snapshot(
        SnapshotResult.from_dict(
            {
                "tables": [
                    {
                        "table": "shop.orders", "snapshot_id": "s1", "resumed": False, "rows": 1000,
                        "duration_s": 4.0, "chunks_run": 3, "chunks_total": 5,
                    }
                ]
            }
        )
    )  # fmt: skip
    orders = MaintainedTableReport(
        "lake/shop/orders", "target", "shop.orders", files_before=9, files_after=1, bytes_after=4096,
        vacuumed_files=8,
    )  # fmt: skip
    metrics.emit_maintenance(MaintenanceReport("shop", 0, tables=[orders], seconds=1.5))
    compared = TableReport(
        "shop.orders", status="mismatch", rows_compared=50, missing=1, differing=2, duplicated=1, excluded=4
    )
    skipped = TableReport("shop.refunds", status="skipped")
    metrics.emit_verify(VerifyReport("shop", "sample", tables=[compared, skipped]))
    calls = {(name, value) for _, name, value, _ in recorder.calls}
    assert {
        ("mysql_cdc.snapshot.rows.shop__orders", 1000),
        ("mysql_cdc.snapshot.rows_per_second.shop__orders", 250.0),
        ("mysql_cdc.snapshot.chunks_run.shop__orders", 3),
        ("mysql_cdc.snapshot.chunks_total.shop__orders", 5),
        ("mysql_cdc.maintenance.files_before.shop.shop__orders.target", 9),
        ("mysql_cdc.maintenance.files_after.shop.shop__orders.target", 1),
        ("mysql_cdc.maintenance.vacuumed_files.shop.shop__orders.target", 8),
        ("mysql_cdc.maintenance.duration", 1500.0),
        ("mysql_cdc.verify.mismatched_rows.shop.shop__orders", 4),
        ("mysql_cdc.verify.left_out_rows.shop.shop__orders", 4),
        ("mysql_cdc.verify.coverage.shop.shop__orders", 50 / 54),
        ("mysql_cdc.verify.coverage.shop.shop__refunds", 0.0),  # not compared: visible, not absent
    } <= calls
