"""The DAG side of the checkpoint chain: where a run stands, and the record it publishes.

The chain lives in the lake (:class:`~airflow_mysql_cdc.engine.lake.checkpoint_log.CheckpointLog`):
every published record, append-only, one per interval end. A run places itself by its interval end
alone (:mod:`airflow_mysql_cdc.runs.run_placement`): the first run snapshots; a run after the
chain's head continues it (covering the intervals of runs that failed in between); a run of an
interval that has a record republishes it unchanged; a run inside the chain is covered and applies
nothing; a run before the first interval is refused: it ends *skipped* (AirflowSkipException, its
downstream tasks skipped too) with the reason and the backfill to run instead, since nothing failed
and no retry could place it. So no run waits for another (no
``depends_on_past``), runs may go in any order, and clearing, retrying or backfilling never rewrites
a record. The run that publishes must be the only one doing so: the example DAG gives its
``replicate`` task ``max_active_tis_per_dag=1``.

Two witnesses are compared before anything is applied: the chain's head (what was published) and
the lake's applied set (committed with the data, :mod:`~airflow_mysql_cdc.engine.lake.state`); see
:func:`airflow_mysql_cdc.engine.values.checkpoint.agree_on_start`. A lake whose log is empty but whose
previous successful run left a record in XCom (a pipeline started by an earlier version) has that
record moved into the log first.

The lake is read here, in the Airflow worker, through :mod:`airflow_mysql_cdc.runs.lake` with
``storage_options``: every option delta-rs needs, credentials included
(:meth:`~airflow_mysql_cdc.hooks.lake_storage.LakeStorageHook.get_delta_storage_options`). They
stay in this process: nothing here returns them to XCom. That module keeps the Delta and Arrow
imports inside its functions: the DAG file is parsed for every task, and they cost half a second.

A run without a logical date (Airflow 3 allows manual runs without one) has no place in the
chain: it is refused with an explanation. Trigger a manual run with a logical date instead.

A run whose conf asks for actions (:mod:`.actions`) and that would apply nothing continues the head
instead the first time it runs, or when nothing was published since the record covering it (a run
queued while a catch-up covered its interval carries its actions out); otherwise ``load_checkpoint``
refuses it before anything waits or is written (:func:`refuse_actions_applying_nothing`). The record
itself is made in :mod:`.run_record`, its counts in :mod:`.run_counts`.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.apply.config import ApplyResult
from airflow_mysql_cdc.engine.values.checkpoint import (
    CheckpointError,
    CheckpointRecord,
    WitnessDisagreementError,
    agree_on_start,
    judge_source,
)
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.runs import lake, run_record
from airflow_mysql_cdc.runs.actions import RunActionError, RunActions, read_run_actions
from airflow_mysql_cdc.runs.lake import Placement
from airflow_mysql_cdc.runs.placing import (
    PUBLISH_TASK_ID,
    placement_in_log,
    refuse_without_logical_date,
)
from airflow_mysql_cdc.runs.segment import RunOrigin

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChainPosition:
    """Where a run stands, and for a run that applies, where its segment starts."""

    placement: Placement
    start: GtidSet | None
    """first/forward: the segment's start (None: a first run into an empty lake, which snapshots)."""
    why: str
    members: dict[str, str] = field(default_factory=dict)
    records_seen: int = 0
    """How many records the chain held when the run placed itself (publishing checks it moved not)."""

    def origin(self) -> RunOrigin:
        """Where a run that applies comes from, for its plan (:func:`.segment.plan_segment`)."""
        return RunOrigin(self.start, self.members)

    def to_xcom(self) -> JsonObject:
        record = self.placement.record
        return {
            "placement": self.placement.kind,
            "first_run": self.placement.applies and self.start is None,
            "checkpoint": str(self.start) if self.start is not None else "",
            "previous_run_id": record.run_id if self.placement.kind == "forward" and record else None,
            # Up to when the checkpoint covers data: the resumability sensor's clock for a stale position.
            "checkpoint_segment_end": record.segment_end
            if self.placement.kind == "forward" and record
            else None,
            "record": record.to_dict() if record is not None and not self.placement.applies else None,
            "members": self.members,
            "why": self.why,
        }


def locate_run(
    context: Any,
    *,
    pipeline_id: str,
    lake_root: str,
    mysql_cdc_conn_id: str,
    storage_options: dict[str, str] | None = None,
    publish_task_id: str = PUBLISH_TASK_ID,
    rebase_to: GtidSet | None = None,
    after_apply: bool = False,
    acts: bool = False,
) -> ChainPosition:
    """Where this run stands in the chain, checked against the lake and the source; fails when they
    disagree, and skips (AirflowSkipException) a run dated before the pipeline's first interval.

    ``acts``: the run's conf asks for actions (:mod:`.actions`). A run that would then apply nothing
    continues the chain's head instead when it runs for the first time or nothing was published since
    the record covering it (:mod:`airflow_mysql_cdc.runs.run_placement`: a run queued while a
    catch-up covered its interval still carries its actions out).

    ``rebase_to`` is an operator's ``rebase_checkpoint`` (:mod:`.actions`): a run that applies then
    starts there, and neither the source's identity nor the lake's position is held against it
    (disaster recovery is when they disagree); the run is recorded as a rebase.

    ``after_apply``: the run places itself again before publishing, after its own writes; the lake
    being ahead by its own segment is then expected, and said so (:func:`agree_on_start`), and the
    placement, logged already at the start, is not logged twice.
    """
    refuse_without_logical_date(context)
    interval_end = context["data_interval_end"]
    placement, records_seen = placement_in_log(
        context, pipeline_id, lake_root, storage_options, publish_task_id, acts
    )
    if not after_apply:
        log.info("this run: %s", placement.describe(interval_end.isoformat()))
    state = lake.pipeline_state(lake_root, pipeline_id, storage_options)
    lake_applied = state.applied_gtids if state is not None else None
    members = dict(state.members or {}) if state is not None else {}
    record = placement.record
    if not placement.applies:
        assert record is not None
        _require_held(record, lake_applied, lake_root)
        return ChainPosition(placement, None, "published already; the lake holds it", members, records_seen)
    predecessor = record if placement.kind == "forward" else None
    if rebase_to is not None:
        why = (
            "rebase_checkpoint: the operator moves the pipeline from "
            f"{predecessor.end_gtids or '(empty)' if predecessor else '(no record)'} (the lake is at "
            f"{lake_applied if lake_applied is not None else '(no state)'}) to {rebase_to or '(empty)'}"
        )
        if not after_apply:  # said once, when the run starts
            log.warning("checkpoint: %s", why)
        return ChainPosition(placement, rebase_to, why, members, records_seen)
    why = _witnessed(predecessor, lake_applied, lake_root, mysql_cdc_conn_id, after_apply)
    start = predecessor.end if predecessor is not None else lake_applied
    return ChainPosition(placement, start, why, members, records_seen)


def _require_held(record: CheckpointRecord, lake_applied: GtidSet | None, lake_root: str) -> None:
    """A published record the lake no longer holds: the lake lost commits."""
    if lake_applied is None or not record.end.issubset(lake_applied):
        raise AirflowFailException(
            f"run {record.run_id} published {record.end_gtids or '(empty)'}, but the lake at {lake_root} "
            f"is at {lake_applied if lake_applied is not None else '(no pipeline state)'}: the lake lost "
            "commits (restored from a backup?). Re-snapshot the tables into a new lake."
        )


def _witnessed(
    predecessor: CheckpointRecord | None,
    lake_applied: GtidSet | None,
    lake_root: str,
    mysql_cdc_conn_id: str,
    after_apply: bool,
) -> str:
    """Why the run may start at its predecessor's end: the source still has its history, and the
    lake's applied set agrees (:func:`agree_on_start`); a failure naming what disagrees otherwise."""
    try:
        if predecessor is not None:
            server = MySqlCdcHook(mysql_cdc_conn_id).get_server_state()
            source = judge_source(predecessor, server.server_uuid, server.gtid_executed)
            if not after_apply:
                log.info("source: %s", source)
        why = agree_on_start(
            predecessor.end if predecessor else None, lake_applied, lake=lake_root, after_apply=after_apply
        )
    except (CheckpointError, WitnessDisagreementError) as error:
        raise AirflowFailException(str(error)) from error
    log.info("checkpoint: %s", why)
    return why


def load_checkpoint(
    context: Any,
    *,
    pipeline_id: str,
    lake_root: str,
    mysql_cdc_conn_id: str,
    publish_task_id: str = PUBLISH_TASK_ID,
    storage_options: dict[str, str] | None = None,
    tables: Sequence[str] = (),
) -> JsonObject:
    """:func:`locate_run` as an XCom value (``checkpoint``: where a run that applies starts, else "").

    With ``tables``, the run's conf is checked here first (:mod:`.actions`), so a wrong conf fails
    before the sensor waits, and a ``rebase_checkpoint`` is the start the sensor checks.
    """
    actions = run_actions(context, tables) if tables else None
    position = locate_run(
        context,
        pipeline_id=pipeline_id,
        lake_root=lake_root,
        mysql_cdc_conn_id=mysql_cdc_conn_id,
        storage_options=storage_options,
        publish_task_id=publish_task_id,
        rebase_to=actions.rebase_checkpoint if actions else None,
        acts=actions is not None and actions.any,
    )
    if actions is not None:
        refuse_actions_applying_nothing(position, actions, context)
    return position.to_xcom()


def refuse_actions_applying_nothing(position: ChainPosition, actions: RunActions, context: Any) -> None:
    """Fail (:class:`RunActionError`, no retry) a run whose conf asks for actions but which applies
    nothing, before anything is written: a cleared run whose interval later runs published past
    (:func:`locate_run` lets every other run carry its actions out). A re-run of the run's own
    record passes: it carried them out, and its record says so."""
    placement = position.placement
    record = placement.record
    if placement.applies or not actions.any or record is None:
        return
    if placement.kind == "rerun" and record.run_id == context.get("run_id"):
        return
    interval_end = context["data_interval_end"].isoformat()
    head_ends_later = (
        f"the segment of run {record.run_id}, or of a later run, ends after this run started (a run dated "
        "in the future?): trigger a new run with this conf once that end has passed"
    )
    why = (
        "this run was cleared after later runs published past its interval, so its actions would be "
        "carried out far from where they were asked. To act now, trigger a new run with this conf "
        "(the UI's trigger form, or airflow dags trigger --conf ...): a run carries its conf's actions "
        "out the first time it runs, even when a catch-up covered its interval while it waited"
        if getattr(context.get("dag_run"), "clear_number", 0)
        else head_ends_later
    )
    raise RunActionError(
        f"this run's conf asks for {actions.to_record()}, but the run applies nothing: "
        f"{placement.describe(interval_end)}. Nothing was done: {why}."
    )


def run_actions(context: Any, tables: Sequence[str]) -> RunActions:
    """The actions the run's conf asks for (:mod:`.actions`), checked against ``tables``."""
    dag_run = context.get("dag_run")
    conf = getattr(dag_run, "conf", None) or {}
    return read_run_actions(conf, tables, getattr(dag_run, "triggering_user_name", None))


def publish_checkpoint(
    context: Any,
    *,
    pipeline_id: str,
    lake_root: str,
    mysql_cdc_conn_id: str,
    tables: Sequence[str],
    applied: ApplyResult | Mapping[str, Any],
    storage_options: dict[str, str] | None = None,
    publish_task_id: str = PUBLISH_TASK_ID,
    segment_end: datetime.datetime | None = None,
    actions: RunActions | None = None,
    pushed: JsonObject | None = None,
    earlier_gtids: GtidSet | None = None,
    position: ChainPosition | None = None,
) -> JsonObject:
    """This run's record, appended to the lake's log; fails if the lake lacks what the run applied.

    ``applied`` is the binlog application's result (its XCom dict in a custom DAG). ``pushed`` are
    the run's other XCom values, kept in the record (:attr:`CheckpointRecord.pushed`) so that a
    re-run of the interval after a clear can push them again. Its ``applied`` is kept with the run's
    counts in place of the application's own (:func:`.run_counts.counted_applied`): every try's
    changes, and how much of them ``earlier_gtids`` held (what earlier tries applied; default: what
    the lake held beyond the run's start when ``applied``'s application started). The record's
    ``pushed["applied"]`` is the run's XCom ``applied``.

    ``position`` is where the run placed itself in this task (the replicate task): it is kept unless
    the chain moved since (:func:`_placed_again`). Without it (a custom DAG's own publishing task)
    the run places itself here, from the log: a record published for this interval in the meantime
    (the same run, retried after it published) is republished as it is. ``segment_end`` is where
    the applied segment ended when that is not the run's interval end (a run that caught up a
    backlog). ``actions`` are recorded with the run (:mod:`.actions`), every paused table with the
    position its lake copy is frozen at, and every stopped table (its lake copy was found wrong: the
    end set does not hold for it) with why (``stopped``).
    """
    result = applied if isinstance(applied, ApplyResult) else ApplyResult.from_dict(dict(applied))
    chain = RunChain(pipeline_id, lake_root, mysql_cdc_conn_id, storage_options, publish_task_id)
    position = _placed_again(context, chain, position, actions)
    if not position.placement.applies:
        assert position.placement.record is not None
        log.info("republishing the record of run %s", position.placement.record.run_id)
        return position.placement.record.to_dict()
    predecessor = position.placement.record if position.placement.kind == "forward" else None
    record = run_record.record_of_run(
        context, pipeline_id=pipeline_id, lake_root=lake_root, mysql_cdc_conn_id=mysql_cdc_conn_id,
        storage_options=storage_options, tables=tables, result=result, predecessor=predecessor,
        segment_end=segment_end, actions=actions, pushed=pushed, earlier_gtids=earlier_gtids,
    )  # fmt: skip
    lake.checkpoint_log(lake_root, pipeline_id, storage_options).append(record)
    log.info(
        "checkpoint: %s -> %s (%s), continuing %s",
        record.start_gtids or "(empty)",
        record.end_gtids or "(empty)",
        "already in the lake: nothing applied" if record.already_applied else "applied by this run",
        f"run {record.previous_run_id}" if record.previous_run_id else "nothing: the pipeline's first record",
    )
    return record.to_dict()


@dataclass(frozen=True)
class RunChain:
    """Where a run's chain is kept, and which source and task it belongs to."""

    pipeline_id: str
    lake_root: str
    mysql_cdc_conn_id: str
    storage_options: dict[str, str] | None
    """Every option delta-rs needs, credentials included: they stay in this process."""
    publish_task_id: str

    def locate(
        self, context: Any, *, rebase_to: GtidSet | None, acts: bool, after_apply: bool = False
    ) -> ChainPosition:
        """:func:`locate_run` in this chain."""
        return locate_run(
            context,
            pipeline_id=self.pipeline_id,
            lake_root=self.lake_root,
            mysql_cdc_conn_id=self.mysql_cdc_conn_id,
            storage_options=self.storage_options,
            publish_task_id=self.publish_task_id,
            rebase_to=rebase_to,
            after_apply=after_apply,
            acts=acts,
        )


def _lake_holds_the_run(position: ChainPosition, chain: RunChain) -> None:
    """Say, after the run's own writes, that the lake holds its predecessor's end and its segment
    (the second witness read again; no source query: the run checked the source when it started)."""
    record = position.placement.record
    predecessor = record.end if record is not None and position.placement.kind == "forward" else None
    state = lake.pipeline_state(chain.lake_root, chain.pipeline_id, chain.storage_options)
    try:
        why = agree_on_start(
            predecessor,
            state.applied_gtids if state is not None else None,
            lake=chain.lake_root,
            after_apply=True,
        )
    except WitnessDisagreementError as error:
        raise AirflowFailException(str(error)) from error
    log.info("checkpoint: %s", why)


def _placed_again(
    context: Any, chain: RunChain, position: ChainPosition | None, actions: RunActions | None
) -> ChainPosition:
    """The run's place when it publishes: ``position`` (where it placed itself in this task) if the
    chain holds as many records as then, else placed again from the log and the witnesses (a record
    published meanwhile, or the run's own publishing task in a custom DAG)."""
    if position is not None:
        records = lake.checkpoint_log(chain.lake_root, chain.pipeline_id, chain.storage_options).records()
        if len(records) == position.records_seen:
            if actions is None or actions.rebase_checkpoint is None:
                _lake_holds_the_run(position, chain)
            return position
        log.info("the chain moved while this run applied: placing the run again before publishing")
    return chain.locate(
        context,
        rebase_to=actions.rebase_checkpoint if actions else None,
        acts=actions is not None and actions.any,
        after_apply=True,
    )
