"""What a run applied, counted in the lake (real local Delta changelogs), whichever try applied it,
and what the ``Summary:`` line says of an earlier try's share (issue 34, item 5). Against a real
kill -9 under the scheduler: tests/integration/scheduler/test_pipeline_under_the_scheduler.py."""

from __future__ import annotations

import datetime
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from airflow_mysql_cdc.engine.apply.config import ApplyResult
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.operators.binlog_apply import summary_line
from airflow_mysql_cdc.runs import run_counts
from airflow_mysql_cdc.runs.record_facts import run_facts

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
START, END = GtidSet.parse(f"{UUID}:1-10"), GtidSet.parse(f"{UUID}:1-20")


def _changelog(lake: Path, table: str, rows: list[tuple[int, int]]) -> None:
    """``(key, gtid number)`` changes of ``shop.<table>``, one insert each."""
    data = pa.table(
        {
            "id": pa.array([row[0] for row in rows], pa.int64()),
            "_cdc_op": pa.array(["insert"] * len(rows), pa.string()),
            "_cdc_gtid": pa.array([f"{UUID}:{row[1]}" for row in rows], pa.string()),
            "_cdc_commit_date": pa.array([datetime.date(2026, 11, 26)] * len(rows), pa.date32()),
        }
    )
    location = lake / "_changelog" / "shop" / table
    write_deltalake(str(location), data, mode="append", partition_by=["_cdc_commit_date"])


def _lake(tmp_path: Path) -> dict:
    """A run 11-20: transactions 11-15 applied by an orphaned earlier try, 16-20 by the retry; 13
    changed both tables, 17 changed one table twice; 5 is the predecessor's."""
    _changelog(tmp_path, "orders", [(1, 5), (2, 11), (3, 12), (4, 13), (5, 14), (6, 15)])
    _changelog(tmp_path, "payments", [(1, 13)])
    _changelog(tmp_path, "orders", [(7, 16), (8, 17), (9, 17), (10, 18), (11, 19), (12, 20)])
    return run_facts(
        str(tmp_path), ["shop.orders", "shop.payments"], start=START, end=END, predecessor=None,
        snapshot_ids={}, storage_options=None,
    ).changes  # fmt: skip


def test_a_run_is_counted_from_its_changes_in_the_lake_and_an_earlier_trys_share_from_its_gtids(
    tmp_path: Path,
) -> None:
    changes = _lake(tmp_path)
    counts = run_counts.count_run(changes, earlier=GtidSet.parse(f"{UUID}:11-15"))
    assert (counts.transactions, counts.rows) == (10, 12)  # 13 changed two tables: one transaction
    assert counts.transactions_by_table == {"shop.orders": 10, "shop.payments": 1}
    assert counts.rows_by_table == {"shop.orders": 11, "shop.payments": 1}
    assert (counts.earlier_transactions, counts.earlier_rows) == (5, 6)
    nobody_earlier = run_counts.count_run(changes, earlier=GtidSet())
    assert not nobody_earlier.by_earlier_tries and nobody_earlier.rows == 12


def test_the_xcom_applied_holds_the_runs_counts_and_the_earlier_tries_share() -> None:
    own = ApplyResult(
        "shop", requested_start=START, resumed_from=GtidSet.parse(f"{UUID}:1-15"), end_gtids=END,
        transactions=5, rows_by_table={"shop.orders": 7}, transactions_by_table={"shop.orders": 5},
        duration_s=2.0, lag_s=0.5,
    ).to_dict()  # fmt: skip
    assert run_counts.earlier_tries(ApplyResult.from_dict(own)) == GtidSet.parse(f"{UUID}:11-15")
    by_table = {"shop.orders": 11, "shop.payments": 1}
    counts = run_counts.RunCounts(10, 12, {"shop.orders": 10, "shop.payments": 1}, by_table, 5, 6)
    applied = run_counts.counted_applied(own, counts)
    assert (applied["transactions"], applied["rows_by_table"]) == (10, by_table)
    assert applied["by_earlier_tries"] == {"transactions": 5, "row_changes": 6}
    assert applied["resumed_from"] == own["resumed_from"] and applied["duration_s"] == 2.0
    assert run_counts.counts_of(applied) == counts
    assert run_counts.counts_of(own) is None  # an application's own result: nothing counted yet


def test_the_summary_counts_the_run_and_says_how_much_an_earlier_try_applied() -> None:
    own = ApplyResult("shop", START, GtidSet.parse(f"{UUID}:1-15"), END, transactions=5,
                      rows_by_table={"shop.orders": 7}, duration_s=2.0, lag_s=0.5)  # fmt: skip
    shared = run_counts.RunCounts(4405, 6891, {}, {}, 4061, 6378)
    assert summary_line(own, shared) == (
        "Summary: 4,405 transaction(s), 6,891 row change(s), of which an earlier try of this run applied "
        "4,061 transaction(s), 6,378 row change(s) and this try the rest, 4 rows/s in 2.0 s; last applied "
        f"commit 0.5 s old; end set {END}"
    )
    adopted = run_counts.RunCounts(4405, 6891, {}, {}, 4405, 6891)  # this try took the orphan's result
    assert ", all of them applied by an earlier try of this run, " in summary_line(own, adopted)
    alone = run_counts.RunCounts(5, 7, {}, {}, 0, 0)  # no earlier try: the line as it always was
    assert summary_line(own, alone) == summary_line(own)
    assert summary_line(own).startswith("Summary: 5 transaction(s), 7 row change(s), 4 rows/s in 2.0 s; ")
