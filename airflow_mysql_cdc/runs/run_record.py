"""The record a run that applied publishes: made from the lake, after the lake is seen to hold it.

Invariant: a record promises its end set to every later run, so it is made only once the lake's
pipeline state holds that set and every table is exact there (:func:`end_the_lake_holds`), and its
per-table facts are read from the lake (:mod:`.record_facts`), not taken from the result of the
application that applied it, which may not be this try's. :func:`~.checkpoint_chain.publish_checkpoint`
appends it to the chain; this module makes it.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord, SourceIdentity
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.runs import lake, record_facts, run_counts

if TYPE_CHECKING:
    from airflow_mysql_cdc.engine.apply.config import ApplyResult
    from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineState
    from airflow_mysql_cdc.runs.actions import RunActions


def end_the_lake_holds(applied: ApplyResult, state: PipelineState | None) -> GtidSet:
    """The application's end set, once the lake is seen to hold it with every table exact there.

    A record promises its end set to every later run; publishing one the lake lacks (a lost commit)
    or one before the snapshots' consistent point (a table not yet exact) would make the next run
    start from rows the lake does not have.
    """
    end = applied.end_gtids
    if state is None or not end.issubset(state.applied_gtids):
        raise AirflowFailException(
            f"the binlog application reported {end} applied, but the lake's pipeline state is at "
            f"{state.applied_gtids if state else '(none)'}: not publishing a checkpoint the lake lacks"
        )
    consistent = applied.consistent_point
    if not consistent.issubset(end):
        raise AirflowFailException(
            f"the binlog application ended at {end}, before the point where every table is exact "
            f"({consistent}: its snapshots' high watermarks lack {consistent - end} there). Publishing "
            "this end set would promise tables the lake does not hold. Clear the task that applies the "
            "segment: it goes on from the lake to that point."
        )
    return end


def source_identity(mysql_cdc_conn_id: str) -> SourceIdentity:
    """Which server the record's GTID sets belong to (a later run refuses another server's)."""
    hook = MySqlCdcHook(mysql_cdc_conn_id)
    endpoint = hook.get_endpoint()
    return SourceIdentity(hook.get_server_state().server_uuid, endpoint.host, endpoint.port)


def make_record(
    context: Any,
    *,
    pipeline_id: str,
    lake_root: str,
    source: SourceIdentity,
    refs: Sequence[str],
    facts: dict[str, JsonObject],
    applied: ApplyResult,
    end: GtidSet,
    state: PipelineState,
    predecessor: CheckpointRecord | None,
    segment_end: datetime.datetime,
    actions: list[JsonObject],
    paused: dict[str, str],
    stopped: dict[str, str],
    pushed: JsonObject,
) -> CheckpointRecord:
    """The record of a run that applied: it continues ``predecessor`` (None: the chain's first).

    Its per-table counts and versions (``facts``) are read from the lake (:mod:`.record_facts`), not
    taken from ``applied``: the application that applied the run's changes may not be this attempt's.
    """
    interval_start = context.get("data_interval_start")
    first_start = interval_start and interval_start.isoformat()
    members = state.members or {}
    return CheckpointRecord(
        pipeline_id=pipeline_id,
        lake_root=lake_root,
        source=source,
        start_gtids=str(applied.requested_start),
        end_gtids=str(end),
        segment_start=predecessor.segment_end if predecessor else first_start,
        segment_end=segment_end.isoformat(),
        run_id=context["run_id"],
        tables={
            ref: {
                "snapshot_id": members.get(ref, ""),
                **facts[ref],
                **({"paused_at": paused[ref]} if ref in paused else {}),
                **({"stopped": stopped[ref]} if ref in stopped else {}),
            }
            for ref in refs
        },
        sink={"applied_gtids": str(state.applied_gtids), "epoch": state.epoch},
        already_applied=applied.already_applied,
        previous_run_id=predecessor.run_id if predecessor else None,
        actions=actions,
        published_at=datetime.datetime.now(datetime.UTC).isoformat(),
        pushed=pushed,
    )


def paused_tables(
    lake_root: str, tables: Sequence[str], state: PipelineState, storage_options: dict[str, str] | None
) -> dict[str, str]:
    """Each paused table (not a member, its mark holding) with the position its lake copy is at."""
    paused: dict[str, str] = {}
    for name in tables:
        ref = TableRef.parse(name)
        if str(ref) in (state.members or {}):
            continue
        mark = lake.pause(lake_root, ref, storage_options)
        progress = lake.snapshot_progress(lake_root, ref, storage_options) if mark is not None else None
        if mark is not None and mark.holds_for(progress.snapshot_id if progress is not None else ""):
            paused[str(ref)] = mark.position
    return paused


def record_of_run(
    context: Any,
    *,
    pipeline_id: str,
    lake_root: str,
    mysql_cdc_conn_id: str,
    storage_options: dict[str, str] | None,
    tables: Sequence[str],
    result: ApplyResult,
    predecessor: CheckpointRecord | None,
    segment_end: datetime.datetime | None,
    actions: RunActions | None,
    pushed: JsonObject | None,
    earlier_gtids: GtidSet | None,
) -> CheckpointRecord:
    """The record of a run that applied ``result``, continuing ``predecessor`` (None: the chain's
    first), its facts and counts read from the lake (:mod:`.record_facts`, :mod:`.run_counts`);
    ``pushed["applied"]`` becomes the run's counted XCom ``applied`` (:func:`.run_counts.counted_applied`)."""
    options = storage_options
    state = lake.pipeline_state(lake_root, pipeline_id, options)
    end = end_the_lake_holds(result, state)
    assert state is not None
    refs = [str(TableRef.parse(name)) for name in tables]
    members = state.members or {}
    facts = record_facts.run_facts(
        lake_root,
        refs,
        start=result.requested_start,
        end=end,
        predecessor=predecessor,
        snapshot_ids={ref: members.get(ref, "") for ref in refs},
        storage_options=options,
    )
    pushed = dict(pushed or {})
    if "applied" in pushed:
        earlier = earlier_gtids if earlier_gtids is not None else run_counts.earlier_tries(result)
        pushed["applied"] = run_counts.counted_applied(
            pushed["applied"], run_counts.count_run(facts.changes, earlier)
        )
    return make_record(
        context,
        pipeline_id=pipeline_id,
        lake_root=lake_root,
        source=source_identity(mysql_cdc_conn_id),
        refs=refs,
        facts=facts.tables,
        applied=result,
        end=end,
        state=state,
        predecessor=predecessor,
        segment_end=segment_end or context["data_interval_end"],
        actions=actions.to_record() if actions else [],
        paused=paused_tables(lake_root, tables, state, options),
        stopped=record_facts.stopped_tables(lake_root, tables, state.members, options),
        pushed=pushed,
    )
