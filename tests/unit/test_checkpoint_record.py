"""The checkpoint record is validated on read, and the chain is checked against the lake."""

from __future__ import annotations

from dataclasses import replace

import pytest

from airflow_mysql_cdc.engine.values.checkpoint import (
    CheckpointError,
    CheckpointRecord,
    SourceIdentity,
    WitnessDisagreementError,
    agree_on_start,
    judge_source,
)
from airflow_mysql_cdc.engine.values.gtid import GtidSet

A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
B = "4a2c8a5e-0000-11e1-9e33-c80aa9429562"
C = "5b3d9b6f-0000-11e1-9e33-c80aa9429562"


def _record(**changes) -> CheckpointRecord:
    values = dict(
        pipeline_id="shop", lake_root="/lake", source=SourceIdentity(A, "db1", 3306),
        start_gtids=f"{A}:1-5", end_gtids=f"{A}:1-9", segment_start=None, segment_end=None, run_id="r1",
    ) | changes  # fmt: skip
    return CheckpointRecord(**values)


def test_a_record_round_trips_through_its_json_form() -> None:
    record = _record()
    assert CheckpointRecord.from_dict(record.to_dict(), pipeline_id="shop") == record


def test_a_record_of_an_unknown_version_is_refused_with_what_to_do() -> None:
    data = _record().to_dict() | {"version": 5}
    with pytest.raises(
        CheckpointError, match="has version 5; .* reads versions 1, 2, 3, 4 only. Upgrade the provider"
    ):
        CheckpointRecord.from_dict(data, pipeline_id="shop")


def test_a_version_1_record_reads_as_one_without_a_predecessor() -> None:
    data = _record().to_dict() | {"version": 1}
    del data["previous_run_id"]
    assert CheckpointRecord.from_dict(data, pipeline_id="shop").previous_run_id is None


def test_a_version_3_record_reads_as_one_without_publication_time_or_lake_facts() -> None:
    data = _record(tables={"shop.orders": {"snapshot_id": "s1", "rows_applied": 4}}).to_dict()
    data["version"] = 3
    del data["published_at"]
    record = CheckpointRecord.from_dict(data, pipeline_id="shop")
    assert record.published_at is None
    assert record.tables == {"shop.orders": {"snapshot_id": "s1", "rows_applied": 4}}


def test_a_version_3_record_reads_as_one_that_pushed_nothing_to_push_again() -> None:
    data = _record().to_dict() | {"version": 3}
    del data["pushed"]
    assert CheckpointRecord.from_dict(data, pipeline_id="shop").pushed == {}


def test_what_a_run_pushed_round_trips_through_its_record_beside_the_lake_fields() -> None:
    pushed = {"plan": {"tables": ["shop.orders"]}, "snapshot": {"tables": [{"table": "shop.orders"}]}}
    record = replace(_record(), pushed=pushed)
    data = record.to_dict()
    assert data["pushed"] == pushed and "plan" not in data and "snapshot" not in data
    assert CheckpointRecord.from_dict(data, pipeline_id="shop").pushed == pushed


def test_a_record_of_another_pipeline_is_refused() -> None:
    with pytest.raises(CheckpointError, match="belongs to pipeline 'shop', not 'billing'"):
        CheckpointRecord.from_dict(_record().to_dict(), pipeline_id="billing")


def test_a_malformed_record_is_refused() -> None:
    data = _record().to_dict() | {"end_gtids": "not a gtid set"}
    with pytest.raises(CheckpointError, match="malformed"):
        CheckpointRecord.from_dict(data, pipeline_id="shop")
    with pytest.raises(CheckpointError, match="is not an airflow-mysql-cdc/checkpoint record"):
        CheckpointRecord.from_dict("1-5", pipeline_id="shop")


def test_a_server_of_the_same_history_is_a_failover_and_another_history_is_refused() -> None:
    record = _record()
    assert "same source" in judge_source(record, A, GtidSet.parse(f"{A}:1-9"))
    assert "a failover" in judge_source(record, B, GtidSet.parse(f"{A}:1-3,{B}:1-2"))
    with pytest.raises(CheckpointError, match="comes from another source"):
        judge_source(record, C, GtidSet.parse(f"{C}:1-100"))


def test_the_lake_and_the_chain_agree_or_the_run_says_why_not() -> None:
    def gtids(text: str) -> GtidSet:
        return GtidSet.parse(f"{A}:{text}")

    assert "agree" in agree_on_start(gtids("1-9"), gtids("1-9"), lake="/lake")
    assert "ahead of the checkpoint" in agree_on_start(gtids("1-9"), gtids("1-12"), lake="/lake")
    assert "first run" in agree_on_start(None, None, lake="/lake")
    assert "continuing from the lake" in agree_on_start(None, gtids("1-3"), lake="/lake")
    with pytest.raises(WitnessDisagreementError, match="behind the previous run's checkpoint: it lacks"):
        agree_on_start(gtids("1-9"), gtids("1-4"), lake="/lake")
    with pytest.raises(WitnessDisagreementError, match="has no pipeline state"):
        agree_on_start(gtids("1-9"), None, lake="/lake")
    with pytest.raises(WitnessDisagreementError, match="different histories"):
        agree_on_start(gtids("1-9"), GtidSet.parse(f"{B}:1-9"), lake="/lake")


def test_after_its_own_apply_a_run_says_the_lake_holds_its_segment_without_suspecting_anyone() -> None:
    def gtids(text: str) -> GtidSet:
        return GtidSet.parse(f"{A}:{text}")

    forward = agree_on_start(gtids("1-9"), gtids("1-12"), lake="/lake", after_apply=True)
    assert forward == f"the lake holds the checkpoint and this run's segment ({A}:10-12)"
    first = agree_on_start(None, gtids("1-3"), lake="/lake", after_apply=True)
    assert first.startswith("the pipeline's first record: the lake at /lake holds what this run")
    idle = agree_on_start(gtids("1-9"), gtids("1-9"), lake="/lake", after_apply=True)
    assert "held no transaction" in idle
    for said in (forward, first, idle):
        assert "failed attempt" not in said and "no previous successful run" not in said
    # What is wrong stays wrong after an apply too.
    with pytest.raises(WitnessDisagreementError, match="behind the previous run's checkpoint"):
        agree_on_start(gtids("1-9"), gtids("1-4"), lake="/lake", after_apply=True)


def test_before_its_apply_a_run_finding_the_lake_ahead_names_every_attempt_that_can_have_applied_it() -> None:
    """It named only a failed attempt of this run or a later run; a user met an earlier run's (one
    killed mid-apply, the next run going on without it), which the lake cannot tell apart (issue 34)."""
    ahead = agree_on_start(GtidSet.parse(f"{A}:1-9"), GtidSet.parse(f"{A}:1-12"), lake="/lake")
    assert ahead == (
        f"the lake is ahead of the checkpoint by {A}:10-12, applied by an attempt that failed before it "
        "published a record (an earlier attempt of this run; an earlier run killed or marked failed "
        "mid-apply, whose interval this run covers; or a later run): this run recomputes its segment "
        "and applies only what the lake lacks"
    )
    retried_first = agree_on_start(None, GtidSet.parse(f"{A}:1-3"), lake="/lake")
    assert "an earlier attempt of the first run got that far" in retried_first
