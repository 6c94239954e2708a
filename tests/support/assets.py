"""Checks of a run's asset events and of its record's lake facts, against the lake read another way."""

from __future__ import annotations

from collections import Counter
from typing import Any

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.runs.assets import read_change_feed


def asset_events(dag_id: str, run_id: str) -> list[dict[str, Any]]:
    """The asset events a DAG run's tasks emitted, from Airflow's database: ``uri`` and ``extra``."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        query = (
            select(AssetModel.uri, AssetEvent.extra)
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .where(AssetEvent.source_dag_id == dag_id, AssetEvent.source_run_id == run_id)
            .order_by(AssetEvent.id)
        )
        return [{"uri": uri, "extra": extra} for uri, extra in session.execute(query).all()]


def lake_changes(
    record: dict[str, Any], table: str, storage_options: dict[str, str] | None = None
) -> Counter:
    """Per ``_cdc_op``, the changelog rows of the record's transactions for ``table``, read whole
    (no pruning, no shared code with the record's own count)."""
    schema, name = table.split(".")
    try:
        changelog = DeltaTable(
            LakeLayout(record["lake_root"]).changelog(schema, name), storage_options=storage_options
        )
    except TableNotFoundError:
        return Counter()
    facts = record["tables"][table]
    transactions = GtidSet.parse(record["end_gtids"]) - GtidSet.parse(
        facts.get("changes_since", record["start_gtids"])
    )
    rows = changelog.to_pyarrow_table(columns=["_cdc_op", "_cdc_gtid"]).to_pylist()
    return Counter(row["_cdc_op"] for row in rows if row["_cdc_gtid"] in transactions)


def assert_record_counts_the_lake(
    record: dict[str, Any], storage_options: dict[str, str] | None = None
) -> None:
    """Each table's ``rows_by_op`` and ``rows_applied`` are the changelog's rows of the run's transactions."""
    for table, facts in record["tables"].items():
        counted = lake_changes(record, table, storage_options)
        assert {op: n for op, n in facts["rows_by_op"].items() if n} == dict(counted), table
        assert facts["rows_applied"] == sum(counted.values()), table


def assert_versions_continue(records: list[dict[str, Any]]) -> None:
    """Each record's version range of a lake table starts one past its predecessor's last version."""
    for before, after in zip(records, records[1:], strict=False):
        for table, facts in after["tables"].items():
            previous = before["tables"].get(table, {}).get("lake_versions", {})
            for kind, versions in facts["lake_versions"].items():
                if kind in previous and versions["first"] is not None:
                    last = previous[kind]["last"]  # None: the table did not exist yet
                    assert versions["first"] == (0 if last is None else last + 1), (table, kind)


def assert_events_describe(events: list[dict[str, Any]], record: dict[str, Any], run_id: str) -> None:
    """One event per lake table of the record, naming its GTID range, rows and versions; the feed each
    names (read back with read_change_feed) has exactly the rows the record counts."""
    assert len(events) == 2 * len(record["tables"])
    for event in events:
        extra = event["extra"]
        facts = record["tables"][extra["source_table"]]
        assert extra["pipeline_id"] == record["pipeline_id"] and extra["run_id"] == run_id
        assert extra["end_gtids"] == record["end_gtids"] and extra["segment_end"] == record["segment_end"]
        assert extra["applied"] == (record["run_id"] == run_id)
        if extra["applied"]:
            assert extra["rows_by_op"] == facts["rows_by_op"]
            assert extra["lake_versions"] == facts["lake_versions"]
            assert event["uri"].endswith(extra["lake_table"].split("://")[-1])
            assert read_change_feed(extra).num_rows == facts["rows_applied"]
        else:
            assert read_change_feed(extra).num_rows == 0
