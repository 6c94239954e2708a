"""Where a run's segment starts: the checkpoint, or the stream start of the snapshots it took."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.runs.segment import SegmentStartUnknownError, plan_segment, segment_start

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
SNAPSHOT = {"tables": [{"table": "shop.orders"}], "stream_start": f"{UUID}:1-90", "consistent_point": ""}
NO_SNAPSHOT = {"tables": [], "stream_start": "", "consistent_point": ""}


def test_a_plans_start_set_wins_over_the_snapshots_stream_start() -> None:
    plan = {"tables": ["shop.new_table"], "restart": False, "rebase": False, "start_gtids": f"{UUID}:1-50"}
    assert segment_start(plan, SNAPSHOT) == GtidSet.parse(f"{UUID}:1-50")
    assert segment_start(plan, NO_SNAPSHOT) == GtidSet.parse(f"{UUID}:1-50")


def test_an_empty_checkpoint_is_the_empty_set_not_a_missing_start() -> None:
    """A source that had executed nothing when the pipeline began: a table joining later must not
    move the segment's start to its own snapshot (that would skip the other tables' changes)."""
    plan = {"tables": ["shop.new_table"], "restart": False, "rebase": False, "start_gtids": ""}
    assert segment_start(plan, SNAPSHOT) == GtidSet.parse("")


def test_a_first_run_starts_at_the_snapshots_stream_start() -> None:
    plan = plan_segment({"first_run": True, "checkpoint": ""}, None, ["shop.orders"], "/unused")
    assert plan == {
        "tables": ["shop.orders"],
        "restart": False,
        "rebase": False,
        "keep_members": False,
        "start_gtids": None,
    }
    assert segment_start(plan, SNAPSHOT) == GtidSet.parse(f"{UUID}:1-90")


def test_a_rebase_after_purged_binlogs_starts_at_the_new_snapshots_stream_start() -> None:
    loaded = {"first_run": False, "checkpoint": f"{UUID}:1-10"}
    plan = plan_segment(loaded, {"resnapshot_needed": True}, ["shop.orders"], "/unused")
    assert (plan["restart"], plan["rebase"], plan["start_gtids"]) == (True, True, None)
    assert segment_start(plan, SNAPSHOT) == GtidSet.parse(f"{UUID}:1-90")


def test_a_first_run_whose_snapshot_took_no_table_fails_naming_what_to_do() -> None:
    plan = {"tables": [], "restart": False, "rebase": False, "keep_members": False, "start_gtids": None}
    with pytest.raises(SegmentStartUnknownError) as failure:
        segment_start(plan, NO_SNAPSHOT)
    message = str(failure.value)
    assert "starts where its snapshots start streaming" in message
    assert "took no snapshot" in message and "nothing was applied" in message
    assert "Name at least one schema.table in the replicate task's tables" in message
