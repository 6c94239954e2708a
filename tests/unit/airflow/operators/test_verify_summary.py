"""The verify task's log: a table it did not compare, or compared in part, is a warning and named in
the Summary line; a green task cannot hide it (issue 33: a skipped table was an INFO line)."""

from __future__ import annotations

import logging

import pytest

from airflow_mysql_cdc.engine.verify.report import TableReport, VerifyReport
from airflow_mysql_cdc.operators.verify import MySqlCdcVerifyOperator, verify_failure

RESULT = {
    "pipeline_id": "shop",
    "mode": "full",
    "position": "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9",
    "seconds": 2.5,
    "skipped": None,
    "mismatched": [],
    "tables": [
        {"table": "shop.orders", "status": "clean", "reason": "", "rows_compared": 1200, "excluded": 0,
         "coverage": 1.0, "low_coverage": False, "repair": None},
        {"table": "shop.hot", "status": "clean", "reason": "", "rows_compared": 55, "excluded": 771,
         "coverage": 55 / 826, "low_coverage": True, "repair": None},
        {"table": "shop.uniqswap", "status": "skipped", "reason": "it left the pipeline: ...",
         "rows_compared": 0, "excluded": 0, "coverage": 0.0, "low_coverage": False, "repair": None},
    ],
}  # fmt: skip


def test_a_table_not_compared_or_compared_in_part_is_a_warning_and_in_the_summary(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The task's logger as a stdlib logger, which caplog reads (Airflow's is structlog's).
    monkeypatch.setattr(MySqlCdcVerifyOperator, "log", logging.getLogger("verify_lake"))
    operator = MySqlCdcVerifyOperator(
        task_id="verify_lake", pipeline_id="shop", tables=["shop.orders"], lake_root="/lake"
    )
    with caplog.at_level(logging.INFO):
        operator._log_result(VerifyReport.from_dict(RESULT))
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert warnings == [
        "NOT FULLY CHECKED: shop.hot only 55 of 826 rows compared (6.6%): 771 key(s) changed after the "
        "position with their rows there unknown were left out; their chunks are checked again by the next "
        "verification",
        "NOT FULLY CHECKED: shop.uniqswap not compared (skipped: it left the pipeline: ...)",
    ]
    (summary,) = [
        record.getMessage() for record in caplog.records if record.getMessage().startswith("Summary")
    ]
    assert summary.startswith(
        "Summary: verify (full) at 3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9: shop.orders clean (1200 of 1200 "
        "rows compared, 100%), shop.hot clean (55 of 826 rows compared, 6.6%), shop.uniqswap skipped (not "
        "compared, 0%); 1255 rows compared, 771 left out"
    )
    assert summary.endswith("; NOT FULLY CHECKED: " + "; ".join(w.split(": ", 1)[1] for w in warnings))


def test_a_failure_says_the_engines_findings_then_how_to_act_on_them_in_airflow() -> None:
    """The engine names the way out by its meaning (repair, re-snapshot); the operator adds how, in
    Airflow: the pipeline JSON's key, clearing the task, the conf that re-snapshots a table."""
    report = VerifyReport("shop", "full", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9", tables=[
        TableReport("shop.orders", "mismatch", missing=1, rows_compared=100),
        TableReport("shop.items", "mismatch", reason="the lake's columns differ from the source's: v is "
                    "missing from the lake"),
    ])  # fmt: skip
    lines = verify_failure(report, "verify_lake").splitlines()
    assert lines[0].startswith("verify_lake: the lake differs from the source at the pipeline's position")
    assert lines[2] == (
        "- shop.items: the lake's columns differ from the source's: v is missing from the lake. A repair "
        "cannot fix columns: re-snapshot the table."
    )
    assert lines[-2].startswith("What to do: verify again with repair on")
    assert lines[-1] == (
        'In Airflow: to repair, set "verify_repair": true in the pipeline JSON (repair=True on this '
        'operator) and clear this task; to re-snapshot, trigger the pipeline DAG with the conf '
        '{"resnapshot": ["shop.items"]}.'
    )
