"""A run's changes per operation, read back from a real (local) Delta changelog."""

from __future__ import annotations

import datetime
import time
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from airflow_mysql_cdc.engine.lake.run_changes import changelog_rows, gtids_in, run_changes, table_version
from airflow_mysql_cdc.engine.values.gtid import GtidSet

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
OTHER = "4a7b9c10-71ca-11e1-9e33-c80aa9429562"


def _changes(rows: list[tuple[int, str, str, datetime.date]]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([row[0] for row in rows], pa.int64()),
            "_cdc_op": pa.array([row[1] for row in rows], pa.string()),
            "_cdc_gtid": pa.array([row[2] for row in rows], pa.string()),
            "_cdc_commit_date": pa.array([row[3] for row in rows], pa.date32()),
        }
    )


def _changelog(tmp_path: Path) -> str:
    location = str(tmp_path / "_changelog" / "shop" / "orders")
    day1, day2 = datetime.date(2026, 11, 25), datetime.date(2026, 11, 26)
    earlier_run = [(1, "insert", f"{UUID}:1", day1), (2, "insert", f"{UUID}:2", day1)]
    this_run = [
        (3, "insert", f"{UUID}:3", day1),
        (1, "update", f"{UUID}:4", day2),
        (3, "update", f"{UUID}:4", day2),
        (2, "delete", f"{UUID}:5", day2),
        (9, "insert", f"{OTHER}:7", day2),
    ]
    for rows in (earlier_run, this_run):
        write_deltalake(location, _changes(rows), mode="append", partition_by=["_cdc_commit_date"])
    return location


def test_the_changes_of_a_gtid_set_are_counted_per_operation_with_their_commit_dates(tmp_path: Path) -> None:
    location = _changelog(tmp_path)
    run = GtidSet.parse(f"{UUID}:1-5,{OTHER}:1-7") - GtidSet.parse(f"{UUID}:1-2,{OTHER}:1-6")
    changes = run_changes(location, run, None, written_since_ms=None)
    assert changes.by_op == {"insert": 2, "update": 2, "delete": 1}
    assert changes.total == 5
    assert (changes.first_commit_date, changes.last_commit_date) == ("2026-11-25", "2026-11-26")


def test_only_partitions_with_files_written_since_the_bound_are_read(tmp_path: Path) -> None:
    location = _changelog(tmp_path)
    run = GtidSet.parse(f"{UUID}:3-5")
    assert run_changes(location, run, None, written_since_ms=0).total == 4
    later = int(time.time() * 1000) + 60_000
    assert run_changes(location, run, None, written_since_ms=later).total == 0  # no file that young


def test_a_table_without_a_changelog_has_no_changes_and_no_version(tmp_path: Path) -> None:
    missing = str(tmp_path / "_changelog" / "shop" / "missing")
    assert run_changes(missing, GtidSet.parse(f"{UUID}:1-5"), None, written_since_ms=None).by_op == {
        "insert": 0,
        "update": 0,
        "delete": 0,
    }
    assert table_version(missing, None) is None
    assert table_version(_changelog(tmp_path), None) == 1


def test_changelog_rows_keep_every_column_of_the_named_transactions_only(tmp_path: Path) -> None:
    rows = changelog_rows(_changelog(tmp_path), GtidSet.parse(f"{UUID}:4"), None, version=1)
    assert rows is not None
    assert sorted(rows.column("id").to_pylist()) == [1, 3]
    assert set(rows.column_names) == {"id", "_cdc_op", "_cdc_gtid", "_cdc_commit_date"}
    before = changelog_rows(_changelog(tmp_path / "again"), GtidSet.parse(f"{UUID}:4"), None, version=0)
    assert before is not None and before.num_rows == 0  # version 0 predates the run's append


def test_gtids_are_matched_by_source_and_interval() -> None:
    transactions = GtidSet.parse(f"{UUID}:1-3:10-12,{OTHER}:5")
    candidates = [f"{UUID}:2", f"{UUID}:4", f"{UUID}:12", f"{OTHER}:5", f"{OTHER}:6", None, "garbage"]
    assert gtids_in(candidates, transactions) == [f"{UUID}:2", f"{UUID}:12", f"{OTHER}:5"]
