"""A record's per-table facts come from the lake (real local Delta tables), not from an attempt's result."""

from __future__ import annotations

import datetime
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord, SourceIdentity
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.runs.record_facts import run_facts, version_range, written_since_ms

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
TODAY = datetime.date(2026, 11, 26)


def _write(lake: Path, kind: str, rows: list[tuple[int, str, int]]) -> None:
    location = lake / "shop" / "orders" if kind == "target" else lake / "_changelog" / "shop" / "orders"
    data = pa.table(
        {
            "id": pa.array([row[0] for row in rows], pa.int64()),
            "_cdc_op": pa.array([row[1] for row in rows], pa.string()),
            "_cdc_gtid": pa.array([f"{UUID}:{row[2]}" for row in rows], pa.string()),
            "_cdc_commit_date": pa.array([TODAY] * len(rows), pa.date32()),
        }
    )
    partitions = ["_cdc_commit_date"] if kind == "changelog" else None
    write_deltalake(str(location), data, mode="append", partition_by=partitions)


def _predecessor(tables: dict, published_at: str | None) -> CheckpointRecord:
    return CheckpointRecord(
        pipeline_id="shop", lake_root="/lake", source=SourceIdentity(UUID, "db", 3306),
        start_gtids="", end_gtids=f"{UUID}:1-2", segment_start=None, segment_end=None, run_id="r1",
        tables=tables, published_at=published_at,
    )  # fmt: skip


def test_facts_count_the_runs_transactions_in_the_lake_and_continue_the_predecessors_versions(
    tmp_path: Path,
) -> None:
    """What an orphaned application wrote counts as much as the publishing attempt's own work:
    nothing here asks an application's result."""
    _write(tmp_path, "target", [(1, "insert", 1)])  # version 0, the predecessor's
    _write(tmp_path, "changelog", [(1, "insert", 1), (2, "insert", 2)])  # version 0
    predecessor = _predecessor(
        {
            "shop.orders": {
                "snapshot_id": "s1",
                "lake_versions": {"target": {"first": 0, "last": 0}, "changelog": {"first": 0, "last": 0}},
            }
        },
        published_at=datetime.datetime.now(datetime.UTC).isoformat(),
    )
    _write(tmp_path, "changelog", [(3, "insert", 3), (1, "update", 3), (2, "delete", 4)])  # version 1
    _write(tmp_path, "changelog", [(3, "update", 5)])  # version 2
    _write(tmp_path, "target", [(3, "insert", 5)])  # version 1
    facts = run_facts(
        str(tmp_path), ["shop.orders"], start=GtidSet.parse(f"{UUID}:1-2"), end=GtidSet.parse(f"{UUID}:1-5"),
        predecessor=predecessor, snapshot_ids={"shop.orders": "s1"}, storage_options=None,
    ).tables["shop.orders"]  # fmt: skip
    assert facts["rows_by_op"] == {"insert": 1, "update": 2, "delete": 1}
    assert facts["rows_applied"] == 4
    assert facts["commit_dates"] == {"first": TODAY.isoformat(), "last": TODAY.isoformat()}
    assert facts["lake_versions"] == {"target": {"first": 1, "last": 1}, "changelog": {"first": 1, "last": 2}}
    assert facts["snapshotted"] is False


def test_a_first_record_reads_every_partition_and_ranges_from_version_0(tmp_path: Path) -> None:
    _write(tmp_path, "target", [(1, "insert", 1)])
    _write(tmp_path, "changelog", [(1, "insert", 2)])
    facts = run_facts(
        str(tmp_path), ["shop.orders", "shop.absent"], start=GtidSet.parse(f"{UUID}:1"),
        end=GtidSet.parse(f"{UUID}:1-2"), predecessor=None, snapshot_ids={"shop.orders": "s1"},
        storage_options=None,
    ).tables  # fmt: skip
    assert facts["shop.orders"]["rows_applied"] == 1
    assert facts["shop.orders"]["lake_versions"]["target"] == {"first": 0, "last": 0}
    assert facts["shop.orders"]["snapshotted"] is True
    assert facts["shop.absent"]["rows_applied"] == 0
    assert facts["shop.absent"]["lake_versions"]["changelog"] == {"first": None, "last": None}


def test_a_resumed_table_counts_its_changes_since_the_pause(tmp_path: Path) -> None:
    _write(tmp_path, "changelog", [(1, "insert", 2), (2, "insert", 4)])  # 2 while paused, 4 in this run
    paused = _predecessor({"shop.orders": {"snapshot_id": "s1", "paused_at": f"{UUID}:1"}}, None)
    facts = run_facts(
        str(tmp_path), ["shop.orders"], start=GtidSet.parse(f"{UUID}:1-3"), end=GtidSet.parse(f"{UUID}:1-4"),
        predecessor=paused, snapshot_ids={"shop.orders": "s1"}, storage_options=None,
    ).tables  # fmt: skip
    assert facts["shop.orders"]["rows_applied"] == 2
    assert facts["shop.orders"]["changes_since"] == f"{UUID}:1"


def test_a_version_range_is_empty_recreated_or_continued() -> None:
    assert version_range(7, 7) == {"first": None, "last": 7}  # no commit since the predecessor
    assert version_range(7, 9) == {"first": 8, "last": 9}
    assert version_range(7, 2) == {"first": 0, "last": 2}  # the table was recreated
    assert version_range(None, 4) == {"first": 0, "last": 4}  # the predecessor stored none
    assert version_range(3, None) == {"first": None, "last": None}  # no table


def test_the_file_bound_is_a_day_before_the_predecessors_publication_or_none() -> None:
    published = datetime.datetime(2026, 11, 26, 12, tzinfo=datetime.UTC)
    bound = written_since_ms(_predecessor({}, published.isoformat()))
    assert bound == int((published - datetime.timedelta(days=1)).timestamp() * 1000)
    assert written_since_ms(_predecessor({}, None)) is None  # a record of version 3 or older
    assert written_since_ms(None) is None
