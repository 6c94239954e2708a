"""The DAG side of the checkpoint chain: load the previous run's record, plan the run, publish its own.

A run starts from the end set of the previous *successful* run (by logical date), pulled from
XCom by that run's run_id, never with ``include_prior_dates`` (which returns values in no
defined order). Runs must execute in date order for the chain to hold: the example DAG has
``max_active_runs=1`` and ``depends_on_past=True``, so catch-up and backfill runs go one by one
and a failed run stops later ones until it succeeds. See :mod:`airflow_mysql_cdc.engine.checkpoint`
for the record and for how the lake, the second witness, is reconciled with it.

The lake is read here, in the Airflow worker, with ``storage_options``: every option delta-rs
needs, credentials included (:meth:`LakeStorageHook.get_delta_storage_options`). They stay in this
process: nothing here returns them to XCom.

A run without a logical date (Airflow 3 allows manual runs without one) has no place in the
chain: it is refused with an explanation. Trigger a manual run with a logical date instead.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.checkpoint import (
    CheckpointError,
    CheckpointRecord,
    SourceIdentity,
    WitnessDisagreementError,
    agree_on_start,
    judge_source,
)
from airflow_mysql_cdc.engine.gtid import GtidSet
from airflow_mysql_cdc.engine.sinks.delta_layout import LakeLayout
from airflow_mysql_cdc.engine.sinks.pipeline_state import PipelineState, PipelineStateStore
from airflow_mysql_cdc.engine.snapshot.delta_snapshot import read_snapshot_progress
from airflow_mysql_cdc.engine.table_metadata import TableRef
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook

log = logging.getLogger(__name__)
PUBLISH_TASK_ID = "publish_checkpoint"


def _lake_state(
    lake_root: str, pipeline_id: str, storage_options: dict[str, str] | None
) -> PipelineState | None:
    return PipelineStateStore(LakeLayout(lake_root).state, pipeline_id, storage_options).read()


def load_checkpoint(
    context: Any,
    *,
    pipeline_id: str,
    lake_root: str,
    mysql_cdc_conn_id: str,
    publish_task_id: str = PUBLISH_TASK_ID,
    storage_options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The previous successful run's checkpoint, checked against the lake; fails when they disagree."""
    ti = context["ti"]
    if context.get("logical_date") is None:
        raise AirflowFailException(
            "this run has no logical date, so it has no place in the checkpoint chain (a segment is the "
            "data interval of a dated run). Trigger it with a logical date (airflow dags trigger "
            "--logical-date ..., or the date field of the UI's trigger form)."
        )
    previous = ti.get_previous_dagrun(state="success")
    record: CheckpointRecord | None = None
    if previous is not None:
        raw = ti.xcom_pull(task_ids=publish_task_id, dag_id=ti.dag_id, run_id=previous.run_id)
        if raw is None:
            raise AirflowFailException(
                f"the previous successful run {previous.run_id} has no checkpoint in XCom (task "
                f"{publish_task_id!r}); was its XCom deleted? Clear that run so it republishes it."
            )
        try:
            record = CheckpointRecord.from_dict(raw, pipeline_id=pipeline_id)
            server = MySqlCdcHook(mysql_cdc_conn_id).get_server_state()
            log.info("source: %s", judge_source(record, server.server_uuid, server.gtid_executed))
        except CheckpointError as error:
            raise AirflowFailException(str(error)) from error
        log.info("previous successful run %s ended at %s", previous.run_id, record.end_gtids or "(empty)")
    state = _lake_state(lake_root, pipeline_id, storage_options)
    lake_applied = state.applied_gtids if state is not None else None
    try:
        why = agree_on_start(record.end if record else None, lake_applied, lake=lake_root)
    except WitnessDisagreementError as error:
        raise AirflowFailException(str(error)) from error
    log.info("checkpoint: %s", why)
    checkpoint = record.end if record else lake_applied
    return {
        "first_run": checkpoint is None,
        "checkpoint": str(checkpoint) if checkpoint is not None else "",
        "previous_run_id": previous.run_id if previous is not None else None,
        "previous_source": record.source.__dict__ if record else None,
        "members": dict(state.members or {}) if state is not None else {},
        "why": why,
    }


def plan_segment(
    loaded: dict[str, Any],
    resumability: dict[str, Any] | None,
    tables: Sequence[str],
    lake_root: str,
    storage_options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Which tables this run snapshots, and where its segment starts.

    - first run: every table (a finished snapshot is kept, an unfinished one resumed); the segment
      starts at the snapshots' stream start;
    - binlogs purged and ``on_purged="resnapshot"``: every table again, and the pipeline is
      rebased onto the new snapshots' stream start;
    - otherwise: tables that are not members of the pipeline and have no snapshot taken after the
      checkpoint (the binlog application then joins them, see ``table_admission``); the segment
      starts at the checkpoint.
    """
    names = [str(TableRef.parse(t)) for t in tables]
    if loaded["first_run"]:
        return {"tables": names, "restart": False, "rebase": False, "start_gtids": ""}
    if resumability and resumability.get("resnapshot_needed"):
        log.warning("binlogs needed were purged: every table is snapshotted again (on_purged=resnapshot)")
        return {"tables": names, "restart": True, "rebase": True, "start_gtids": ""}
    checkpoint = GtidSet.parse(loaded["checkpoint"])
    members = loaded.get("members") or {}
    to_snapshot: list[str] = []
    restart = False
    for name in names:
        if name in members:
            continue
        progress = read_snapshot_progress(lake_root, TableRef.parse(name), storage_options)
        if progress is not None and progress.complete and checkpoint.issubset(progress.stream_start):
            continue  # snapshotted after the checkpoint (an earlier attempt of this run): joins as it is
        to_snapshot.append(name)
        restart |= progress is not None and progress.complete
    if to_snapshot:
        log.info("new tables to snapshot before they join the pipeline: %s", ", ".join(to_snapshot))
    return {"tables": to_snapshot, "restart": restart, "rebase": False, "start_gtids": loaded["checkpoint"]}


def publish_checkpoint(
    context: Any,
    *,
    pipeline_id: str,
    lake_root: str,
    mysql_cdc_conn_id: str,
    tables: Sequence[str],
    applied: dict[str, Any],
    storage_options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """This run's checkpoint record; fails if the lake does not hold what the run says it applied."""
    state = _lake_state(lake_root, pipeline_id, storage_options)
    end = GtidSet.parse(applied["end_gtids"])
    if state is None or not end.issubset(state.applied_gtids):
        raise AirflowFailException(
            f"the binlog application reported {end} applied, but the lake's pipeline state is at "
            f"{state.applied_gtids if state else '(none)'}: not publishing a checkpoint the lake lacks"
        )
    consistent = GtidSet.parse(applied.get("consistent_point") or "")
    if not consistent.issubset(end):
        raise AirflowFailException(
            f"the binlog application ended at {end}, before the point where every table is exact "
            f"({consistent}: its snapshots' high watermarks lack {consistent - end} there). Publishing "
            "this end set would promise tables the lake does not hold. Clear apply_segment: it goes on "
            "from the lake to that point."
        )
    hook = MySqlCdcHook(mysql_cdc_conn_id)
    endpoint = hook.get_endpoint()
    server = hook.get_server_state()
    interval_start = context.get("data_interval_start")
    interval_end = context.get("data_interval_end")
    record = CheckpointRecord(
        pipeline_id=pipeline_id,
        lake_root=lake_root,
        source=SourceIdentity(server.server_uuid, endpoint.host, endpoint.port),
        start_gtids=applied["requested_start"],
        end_gtids=str(end),
        segment_start=interval_start.isoformat() if interval_start else None,
        segment_end=interval_end.isoformat() if interval_end else None,
        run_id=context["run_id"],
        tables={
            str(TableRef.parse(name)): {
                "snapshot_id": (state.members or {}).get(str(TableRef.parse(name)), ""),
                "rows_applied": applied.get("rows_by_table", {}).get(str(TableRef.parse(name)), 0),
            }
            for name in tables
        },
        sink={"applied_gtids": str(state.applied_gtids), "epoch": state.epoch},
        already_applied=bool(applied.get("already_applied")),
    )
    log.info(
        "checkpoint: %s -> %s (%s)",
        record.start_gtids or "(empty)",
        record.end_gtids or "(empty)",
        "already in the lake: nothing applied" if record.already_applied else "applied by this run",
    )
    return record.to_dict()
