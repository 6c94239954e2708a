"""One pipeline run as a typed step: place → plan → (snapshot, apply: the operator's) → publish.

Invariant: inside the replicate task a run's values stay typed from its place in the chain to its
record: the position (:class:`~.checkpoint_chain.ChainPosition`) gives the plan its origin
(:class:`~.segment.RunOrigin`), the plan (:class:`~.segment.SegmentPlan`) gives the segment its
start, the binlog application's :class:`~airflow_mysql_cdc.engine.apply.config.ApplyResult` is what
is published, and the run is located once (publishing checks only that the chain did not move:
:func:`~.checkpoint_chain.publish_checkpoint`). Dicts appear only where XCom begins: each value the
step pushes is pushed in its JSON form, and kept for the record (:attr:`pushed`), so a re-run of
the interval after a clear pushes them again (:mod:`.republish`).

The step knows no Spark and no process: the operator runs the snapshot and the application with its
hooks and hands their results back (tests/unit/airflow/runs/test_run_step.py; end to end, the DAG
tests).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_mysql_cdc.engine.apply.config import ApplyResult
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.runs import checkpoint_chain
from airflow_mysql_cdc.runs.actions import RunActions
from airflow_mysql_cdc.runs.checkpoint_chain import ChainPosition, RunChain
from airflow_mysql_cdc.runs.segment import SegmentPlan, plan_segment


@dataclass
class RunStep:
    """A run being carried out by the replicate task (module docstring)."""

    context: Any
    chain: RunChain
    tables: tuple[str, ...]
    actions: RunActions
    position: ChainPosition
    pushed: JsonObject = field(default_factory=dict)
    """The XCom values this run pushed, kept in its record."""

    @classmethod
    def place(cls, context: Any, chain: RunChain, tables: Sequence[str]) -> RunStep:
        """The run, placed in its chain (its conf's actions checked and logged first)."""
        actions = checkpoint_chain.run_actions(context, tables)
        position = chain.locate(context, rebase_to=actions.rebase_checkpoint, acts=actions.any)
        step = cls(context, chain, tuple(tables), actions, position)
        if position.placement.applies and actions.any:
            for entry in actions.to_record():
                checkpoint_chain.log.info("action asked by the run's conf: %s", entry)
            context["ti"].xcom_push(key="actions", value=actions.to_record())
        return step

    @property
    def applies(self) -> bool:
        return self.position.placement.applies

    def refuse_actions_applying_nothing(self) -> None:
        checkpoint_chain.refuse_actions_applying_nothing(self.position, self.actions, self.context)

    def push(self, key: str, value: Any) -> None:
        """Push ``value`` (JSON) under ``key`` and keep it for the record."""
        self.context["ti"].xcom_push(key=key, value=value)
        self.pushed[key] = value

    def plan(self, resumability: Mapping[str, Any] | None, absent: frozenset[str]) -> SegmentPlan:
        """Which tables the run snapshots and where its segment starts (pushed as ``plan``)."""
        plan = plan_segment(
            self.position.origin(),
            self.tables,
            self.chain.lake_root,
            self.chain.storage_options,
            resnapshot_needed=bool(resumability and resumability.get("resnapshot_needed")),
            absent=absent,
            actions=self.actions,
        )
        self.push("plan", plan.to_xcom())
        return plan

    def publish(self, result: ApplyResult, segment_end: datetime.datetime, earlier: GtidSet) -> JsonObject:
        """The run's record, published (``earlier``: what earlier tries applied of the run)."""
        self.push("applied", result.to_dict())  # this try's own, until the record counts the run
        return checkpoint_chain.publish_checkpoint(
            self.context,
            pipeline_id=self.chain.pipeline_id,
            lake_root=self.chain.lake_root,
            mysql_cdc_conn_id=self.chain.mysql_cdc_conn_id,
            storage_options=self.chain.storage_options,
            publish_task_id=self.chain.publish_task_id,
            tables=self.tables,
            applied=result,
            segment_end=segment_end,
            actions=self.actions,
            pushed=self.pushed,
            earlier_gtids=earlier,
            position=self.position,
        )
