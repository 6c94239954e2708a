"""Where a run's segment starts: the checkpoint, or the stream start of the snapshots it took."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.snapshot.result import SnapshotResult, TableSnapshotResult
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.runs.segment import RunOrigin, SegmentPlan, SegmentStartUnknownError, plan_segment

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
_START = GtidSet.parse(f"{UUID}:1-90")
SNAPSHOT = SnapshotResult.of_tables(
    [TableSnapshotResult("shop.orders", "snap-1", False, 1, 1, 5, _START, _START, 0.5)]
)
NO_SNAPSHOT = SnapshotResult()


def test_a_plans_start_set_wins_over_the_snapshots_stream_start() -> None:
    plan = SegmentPlan(("shop.new_table",), start=GtidSet.parse(f"{UUID}:1-50"))
    assert plan.segment_start(SNAPSHOT) == GtidSet.parse(f"{UUID}:1-50")
    assert plan.segment_start(NO_SNAPSHOT) == GtidSet.parse(f"{UUID}:1-50")


def test_an_empty_checkpoint_is_the_empty_set_not_a_missing_start() -> None:
    """A source that had executed nothing when the pipeline began: a table joining later must not
    move the segment's start to its own snapshot (that would skip the other tables' changes)."""
    plan = SegmentPlan(("shop.new_table",), start=GtidSet.parse(""))
    assert plan.segment_start(SNAPSHOT) == GtidSet.parse("")
    assert SegmentPlan.from_xcom(plan.to_xcom()) == plan and plan.to_xcom()["start_gtids"] == ""


def test_a_first_run_starts_at_the_snapshots_stream_start() -> None:
    plan = plan_segment(RunOrigin(None), ["shop.orders"], "/unused")
    assert plan.to_xcom() == {
        "tables": ["shop.orders"],
        "restart": False,
        "rebase": False,
        "keep_members": False,
        "start_gtids": None,
    }
    assert plan.segment_start(SNAPSHOT) == GtidSet.parse(f"{UUID}:1-90")


def test_a_rebase_after_purged_binlogs_starts_at_the_new_snapshots_stream_start() -> None:
    origin = RunOrigin(GtidSet.parse(f"{UUID}:1-10"))
    plan = plan_segment(origin, ["shop.orders"], "/unused", resnapshot_needed=True)
    assert (plan.restart, plan.rebase, plan.start) == (True, True, None)
    assert plan.segment_start(SNAPSHOT) == GtidSet.parse(f"{UUID}:1-90")


def test_a_first_run_whose_snapshot_took_no_table_fails_naming_what_to_do() -> None:
    with pytest.raises(SegmentStartUnknownError) as failure:
        SegmentPlan(()).segment_start(NO_SNAPSHOT)
    message = str(failure.value)
    assert "starts where its snapshots start streaming" in message
    assert "took no snapshot" in message and "nothing was applied" in message
    assert "Name at least one schema.table in the replicate task's tables" in message
