"""Lake tables as Airflow Assets, the extra of each run's events, and reading back the feed one names."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from airflow.sdk import Asset
from airflow.sdk.execution_time.context import OutletEventAccessors
from deltalake import write_deltalake

from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.operators.replicate import MySqlCdcReplicateOperator
from airflow_mysql_cdc.runs.assets import (
    asset_uri,
    emit_run_events,
    event_extra,
    lake_table_assets,
    read_change_feed,
)
from airflow_mysql_cdc.runs.lake import ChangelogVersionGoneError, changelog_rows
from tests.support.maintenance import maintain_like_another_writer

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
DAY = datetime.date(2026, 11, 26)


def _record(run_id: str = "scheduled__1", **tables: dict[str, Any]) -> dict[str, Any]:
    return {
        "pipeline_id": "shop",
        "run_id": run_id,
        "start_gtids": f"{UUID}:1-2",
        "end_gtids": f"{UUID}:1-5",
        "segment_start": "2026-11-25T00:00:00+00:00",
        "segment_end": "2026-11-26T00:00:00+00:00",
        "source": {"server_uuid": UUID, "host": "db", "port": 3306},
        "tables": tables
        or {
            "shop.orders": {
                "snapshot_id": "s1",
                "rows_applied": 3,
                "rows_by_op": {"insert": 1, "update": 1, "delete": 1},
                "commit_dates": {"first": DAY.isoformat(), "last": DAY.isoformat()},
                "lake_versions": {"target": {"first": 4, "last": 5}, "changelog": {"first": 2, "last": 2}},
                "snapshotted": False,
            }
        },
    }


def test_a_local_lake_tables_uri_is_a_file_uri_and_an_object_store_uri_is_kept() -> None:
    assert asset_uri("/data/lake/shop/orders") == "file:///data/lake/shop/orders"
    assert asset_uri("s3://bucket/lake/shop/orders") == "s3://bucket/lake/shop/orders"
    assets = lake_table_assets("s3://bucket/lake/", ["shop.orders"])
    assert [asset.uri for asset in assets] == [
        "s3://bucket/lake/shop/orders",
        "s3://bucket/lake/_changelog/shop/orders",
    ]
    assert assets[0] == Asset("s3://bucket/lake/shop/orders")  # what a downstream DAG writes


def test_the_replicate_operator_has_its_lake_tables_as_outlets_unless_told_otherwise() -> None:
    common: dict[str, Any] = {"pipeline_id": "shop", "tables": ["shop.orders", "shop.items"]}
    operator = MySqlCdcReplicateOperator(task_id="replicate", lake_root="/lake", **common)
    assert [asset.uri for asset in operator.outlets] == [
        "file:///lake/shop/orders",
        "file:///lake/_changelog/shop/orders",
        "file:///lake/shop/items",
        "file:///lake/_changelog/shop/items",
    ]
    assert MySqlCdcReplicateOperator(task_id="none", lake_root="/lake", outlets=[], **common).outlets == []
    templated = MySqlCdcReplicateOperator(task_id="templated", lake_root="{{ params.lake }}", **common)
    assert templated.outlets == []


def test_an_event_of_a_run_that_applied_names_its_gtids_rows_versions_and_segment() -> None:
    extra = event_extra(_record(), "shop.orders", "target", run_id="scheduled__1", lake_root="/lake")
    assert extra == {
        "format": "airflow-mysql-cdc/asset-event",
        "version": 1,
        "pipeline_id": "shop",
        "run_id": "scheduled__1",
        "record_run_id": "scheduled__1",
        "applied": True,
        "source_table": "shop.orders",
        "kind": "target",
        "lake_table": "/lake/shop/orders",
        "changelog_table": "/lake/_changelog/shop/orders",
        "start_gtids": f"{UUID}:1-2",
        "end_gtids": f"{UUID}:1-5",
        "segment_start": "2026-11-25T00:00:00+00:00",
        "segment_end": "2026-11-26T00:00:00+00:00",
        "rows_by_op": {"insert": 1, "update": 1, "delete": 1},
        "rows_applied": 3,
        "commit_dates": {"first": "2026-11-26", "last": "2026-11-26"},
        "lake_versions": {"target": {"first": 4, "last": 5}, "changelog": {"first": 2, "last": 2}},
        "snapshotted": False,
    }
    assert "db" not in str(extra) and "source" not in extra  # nothing about the server, no secret


def test_an_event_of_a_run_covered_by_another_runs_record_names_an_empty_feed() -> None:
    extra = event_extra(_record(), "shop.orders", "changelog", run_id="manual__2", lake_root="/lake")
    assert extra["applied"] is False and extra["record_run_id"] == "scheduled__1"
    assert extra["start_gtids"] == extra["end_gtids"] == f"{UUID}:1-5"
    assert extra["rows_applied"] == 0 and extra["rows_by_op"] == {"insert": 0, "update": 0, "delete": 0}
    assert extra["lake_versions"]["changelog"] == {"first": None, "last": 2}


def test_an_event_of_a_resumed_table_starts_where_it_was_paused() -> None:
    record = _record()
    record["tables"]["shop.orders"]["changes_since"] = f"{UUID}:1"
    extra = event_extra(record, "shop.orders", "changelog", run_id="scheduled__1", lake_root="/lake")
    assert (extra["start_gtids"], extra["end_gtids"]) == (f"{UUID}:1", f"{UUID}:1-5")


def test_a_record_without_lake_facts_gives_an_event_without_rows() -> None:
    old = _record(**{"shop.orders": {"snapshot_id": "s1", "rows_applied": 7}})
    extra = event_extra(old, "shop.orders", "target", run_id="scheduled__1", lake_root="/lake")
    assert extra["rows_applied"] == 7 and extra["lake_versions"] == {} and extra["commit_dates"] is None


def test_only_the_outlets_that_are_the_runs_lake_tables_get_its_extra() -> None:
    mine = lake_table_assets("/lake", ["shop.orders"])
    other = Asset("s3://elsewhere/report")
    events = OutletEventAccessors()
    context = {"run_id": "scheduled__1", "outlet_events": events}
    emitted = emit_run_events(context, [*mine, other], _record(), lake_root="/lake", tables=["shop.orders"])
    assert [extra["kind"] for extra in emitted] == ["target", "changelog"]
    assert events[mine[1]].extra["lake_table"] == "/lake/_changelog/shop/orders"
    assert events[other].extra == {}


def _changelog(lake: Path) -> None:
    location = str(lake / "_changelog" / "shop" / "orders")
    for gtids in ([1, 2], [3, 4, 5], [6]):  # versions 0, 1, 2
        write_deltalake(
            location,
            pa.table(
                {
                    "id": pa.array(gtids, pa.int64()),
                    "_cdc_op": pa.array(["insert"] * len(gtids), pa.string()),
                    "_cdc_gtid": pa.array([f"{UUID}:{n}" for n in gtids], pa.string()),
                    "_cdc_commit_date": pa.array([DAY] * len(gtids), pa.date32()),
                }
            ),
            mode="append",
            partition_by=["_cdc_commit_date"],
        )


def test_the_change_feed_of_an_event_is_exactly_the_changelog_rows_of_its_transactions(
    tmp_path: Path,
) -> None:
    _changelog(tmp_path)
    extra = event_extra(_record(), "shop.orders", "target", run_id="scheduled__1", lake_root=str(tmp_path))
    feed = read_change_feed(extra)
    assert sorted(feed.column("id").to_pylist()) == [3, 4, 5]  # 1-2 before the run, 6 after it
    covered = event_extra(_record(), "shop.orders", "changelog", run_id="manual__2", lake_root=str(tmp_path))
    assert read_change_feed(covered).num_rows == 0


def test_a_change_feed_whose_version_is_gone_is_read_as_of_now(tmp_path: Path) -> None:
    """Maintenance with a short log retention (another writer's, in the daily pipeline test) cleans
    up the log of the version an event names: the same rows are read as of now."""
    _changelog(tmp_path)
    extra = event_extra(_record(), "shop.orders", "changelog", run_id="scheduled__1", lake_root=str(tmp_path))
    maintain_like_another_writer(tmp_path)
    with pytest.raises(ChangelogVersionGoneError):
        changelog_rows(extra["changelog_table"], GtidSet.parse(f"{UUID}:3-5"), None, version=2)
    assert sorted(read_change_feed(extra).column("id").to_pylist()) == [3, 4, 5]


def test_reading_a_change_feed_from_something_else_says_what_to_pass() -> None:
    with pytest.raises(ValueError, match="not an airflow-mysql-cdc asset event's extra"):
        read_change_feed({"rows": 3})
