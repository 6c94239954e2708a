"""Each lake table is an Airflow Asset; each run says in an asset event exactly what it wrote there.

Invariant: an event's extra names a change feed a downstream reader can read back exactly, without
commit history: the changelog rows of the source table whose ``_cdc_gtid`` is in ``end_gtids``
minus ``start_gtids`` (:func:`read_change_feed`). The figures come from the run's checkpoint record,
which counts them in the lake (:mod:`.record_facts`), so an event is as true as its record, whichever
attempt applied the run.

Assets. Per source table, two: its target and its changelog (docs/assets.md). The URI names the
Delta table's location: the lake's own URI for an object store (``s3://bucket/lake/shop/orders``),
``file://`` and the absolute path for a local lake (``file:///data/lake/_changelog/shop/orders``).
The asset's name is its URI (Airflow's default), so ``Asset("s3://bucket/lake/shop/orders")`` in a
downstream DAG is the same asset; :func:`lake_table_asset` builds it from the pipeline's settings.
Airflow normalises the URI (scheme lower case, trailing ``/`` removed) and keeps schemes it has no
handler for (``s3``, ``gs``, ``abfss`` without the provider installed) as they are.

Events. Airflow 3 records an event for every outlet of a task that succeeds; the replicate task
fills each one's extra (:func:`event_extra`). A run that applied its segment (or republishes its own
record: a retry after it published, a clear) names its changes: ``applied: true``. A run that applies
nothing because another run's record covers its interval (a run inside the chain) still gets events
(Airflow emits them); they say ``applied: false``, name that run (``record_run_id``), and an empty
change feed (``start_gtids`` = ``end_gtids``, no rows, no versions), so a consumer reads nothing twice.
Events are at least once (a cleared run emits its record's events again): a consumer that must not
apply a feed twice keys it by ``pipeline_id`` and ``end_gtids``.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset

from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.runs import lake
from airflow_mysql_cdc.runs.record_facts import LAKE_TABLE_KINDS

if TYPE_CHECKING:
    import pyarrow as pa

EXTRA_FORMAT = "airflow-mysql-cdc/asset-event"
EXTRA_VERSION = 1
_NO_ROWS = {"insert": 0, "update": 0, "delete": 0}


def asset_uri(location: str) -> str:
    """A lake table's location as an asset URI: a URI as it is, a local path as ``file://`` + its path."""
    if "://" in location:
        return location
    return Path(os.path.abspath(location)).as_uri()


def lake_table_asset(lake_root: str, table: str, kind: str) -> Asset:
    """The asset of ``table``'s (``schema.table``) ``target`` or ``changelog`` in the lake ``lake_root``."""
    return Asset(asset_uri(lake.lake_table(lake_root, TableRef.parse(table), kind)))


def lake_table_assets(lake_root: str, tables: Iterable[str]) -> list[Asset]:
    """Every lake table of ``tables``: per table its target, then its changelog."""
    return [lake_table_asset(lake_root, table, kind) for table in tables for kind in LAKE_TABLE_KINDS]


def event_extra(
    record: Mapping[str, Any], table: str, kind: str, *, run_id: str, lake_root: str
) -> JsonObject:
    """The extra of run ``run_id``'s event for ``table``'s ``kind`` table, from the record it returns.

    Holds no secret: the record names the lake, the source's host and GTID sets, never credentials
    (and only the GTID sets, segment and figures are taken from it).
    """
    applied = record["run_id"] == run_id
    ref = TableRef.parse(table)
    facts = record.get("tables", {}).get(table, {})
    versions = facts.get("lake_versions") or {}
    if not applied:
        versions = {
            name: {"first": None, "last": (versions.get(name) or {}).get("last")} for name in versions
        }
    return {
        "format": EXTRA_FORMAT,
        "version": EXTRA_VERSION,
        "pipeline_id": record["pipeline_id"],
        "run_id": run_id,
        "record_run_id": record["run_id"],
        "applied": applied,
        "source_table": table,
        "kind": kind,
        "lake_table": lake.lake_table(lake_root, ref, kind),
        "changelog_table": lake.lake_table(lake_root, ref, "changelog"),
        "start_gtids": facts.get("changes_since", record["start_gtids"]) if applied else record["end_gtids"],
        "end_gtids": record["end_gtids"],
        "segment_start": record.get("segment_start"),
        "segment_end": record.get("segment_end"),
        "rows_by_op": dict(facts.get("rows_by_op") or _NO_ROWS) if applied else dict(_NO_ROWS),
        "rows_applied": facts.get("rows_applied", 0) if applied else 0,
        "commit_dates": facts.get("commit_dates") if applied else None,
        "lake_versions": versions,
        "snapshotted": bool(facts.get("snapshotted")) if applied else False,
    }


def emit_run_events(
    context: Any, outlets: Sequence[Any], record: Mapping[str, Any], *, lake_root: str, tables: Sequence[str]
) -> list[JsonObject]:
    """Fill the extra of each outlet that is one of ``tables``' lake tables; returns the extras set.

    Other outlets (a user's own) are left as they are: Airflow emits their events unchanged.
    """
    ours = {asset.uri: asset for asset in outlets if isinstance(asset, Asset)}
    emitted = []
    for table in tables:
        name = str(TableRef.parse(table))
        for kind in LAKE_TABLE_KINDS:
            asset = lake_table_asset(lake_root, name, kind)
            if asset.uri not in ours:
                continue
            extra = event_extra(record, name, kind, run_id=str(context["run_id"]), lake_root=lake_root)
            context["outlet_events"][ours[asset.uri]].extra.update(extra)
            emitted.append(extra)
    return emitted


def read_change_feed(extra: Mapping[str, Any], *, storage_options: dict[str, str] | None = None) -> pa.Table:
    """The changelog rows an event names: the source table's changes of ``end_gtids - start_gtids``.

    ``extra`` is an event's extra (``triggering_asset_events`` in a downstream task's context, or
    the ``inlet_events`` accessor), of either lake table of the source table; ``storage_options``
    what delta-rs needs to read the lake, credentials included (for an object store:
    ``LakeStorageHook(lake_conn_id).get_delta_storage_options(public_options)``).

    Reads the changelog as of the last version the event names (the table as the run left it), or,
    once that version's log was cleaned up, as of now: the changelog is append-only, so both hold the
    same rows of those transactions. Only the commit-date partitions the event names are read.
    Every column is returned: the source columns and ``_cdc_op``, ``_cdc_gtid``, ``_cdc_commit_ts``,
    ``_cdc_seq``, ``_cdc_commit_date``; sort by ``_cdc_commit_ts``, ``_cdc_gtid``, ``_cdc_seq`` for
    binlog order within a transaction. An event of a run that applied nothing names no rows.
    """
    import pyarrow as pa

    if extra.get("format") != EXTRA_FORMAT:
        raise ValueError(
            f"not an airflow-mysql-cdc asset event's extra: {str(dict(extra))[:200]!r}. Pass the extra of an "
            "event of a replicate task's lake table asset (event.extra)."
        )
    changelog = extra["changelog_table"]
    transactions = GtidSet.parse(extra["end_gtids"]) - GtidSet.parse(extra["start_gtids"])
    dates = extra.get("commit_dates") or {}
    partitions = _days(dates["first"], dates["last"]) if dates.get("first") and dates.get("last") else []
    version = ((extra.get("lake_versions") or {}).get("changelog") or {}).get("last")
    try:
        rows = lake.changelog_rows(
            changelog, transactions, storage_options, partitions=partitions, version=version
        )
    except lake.ChangelogVersionGoneError:  # its log cleaned up, its files vacuumed: the same rows, now
        rows = lake.changelog_rows(changelog, transactions, storage_options, partitions=partitions)
    return rows if rows is not None else pa.table({})


def _days(first: str, last: str) -> list[datetime.date]:
    start, end = datetime.date.fromisoformat(first), datetime.date.fromisoformat(last)
    return [start + datetime.timedelta(days=offset) for offset in range((end - start).days + 1)]
