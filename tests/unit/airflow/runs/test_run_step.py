"""The run as a typed step: what it pushes is what it keeps for the record, and its plan is typed
from its place in the chain to its segment's start (the XCom holds the plan's JSON form only)."""

from __future__ import annotations

from typing import Any

from airflow_mysql_cdc.engine.snapshot.result import SnapshotResult, TableSnapshotResult
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.runs.actions import RunActions
from airflow_mysql_cdc.runs.checkpoint_chain import ChainPosition
from airflow_mysql_cdc.runs.lake import Placement
from airflow_mysql_cdc.runs.run_step import RunChain, RunStep
from airflow_mysql_cdc.runs.segment import SegmentPlan

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
CHECKPOINT = GtidSet.parse(f"{UUID}:1-40")


class _TaskInstance:
    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def _step(position: ChainPosition) -> tuple[RunStep, _TaskInstance]:
    ti = _TaskInstance()
    chain = RunChain("shop", "/unused", "mysql_cdc_default", None, "replicate")
    return RunStep({"ti": ti}, chain, ("shop.orders",), RunActions(), position), ti


def test_a_runs_plan_starts_at_its_checkpoint_and_is_pushed_in_its_json_form_only() -> None:
    position = ChainPosition(Placement("forward", None), CHECKPOINT, "continues", {"shop.orders": "s1"}, 3)
    step, ti = _step(position)
    plan = step.plan(resumability=None, absent=frozenset())
    assert plan == SegmentPlan((), start=CHECKPOINT)
    assert plan.segment_start(SnapshotResult()) == CHECKPOINT
    assert ti.pushed["plan"] == step.pushed["plan"] == plan.to_xcom()
    assert SegmentPlan.from_xcom(ti.pushed["plan"]) == plan


def test_a_first_run_plans_every_table_from_the_snapshots_stream_start() -> None:
    step, _ = _step(ChainPosition(Placement("first", None), None, "the pipeline's first run"))
    plan = step.plan(resumability=None, absent=frozenset())
    assert (plan.tables, plan.start) == (("shop.orders",), None)
    start = GtidSet.parse(f"{UUID}:1-90")
    taken = TableSnapshotResult("shop.orders", "snap-1", False, 1, 1, 5, start, start, 0.5)
    assert plan.segment_start(SnapshotResult.of_tables([taken])) == GtidSet.parse(f"{UUID}:1-90")


def test_purged_binlogs_plan_every_table_again_and_a_rebase() -> None:
    step, _ = _step(ChainPosition(Placement("forward", None), CHECKPOINT, "continues", {"shop.orders": "s1"}))
    plan = step.plan(resumability={"resnapshot_needed": True}, absent=frozenset())
    assert (plan.tables, plan.restart, plan.rebase, plan.start) == (("shop.orders",), True, True, None)
