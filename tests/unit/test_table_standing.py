"""The one rule for a configured table that is gone, as the prerequisites, the plan and admission ask it."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.mysql.table_standing import TableStanding, judge_table
from airflow_mysql_cdc.engine.values.gtid import GtidSet

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
DDL = f"{UUID}:412"
BEFORE_THE_DDL = GtidSet.parse(f"{UUID}:1-300")
AFTER_THE_DDL = GtidSet.parse(f"{UUID}:1-500")


def test_a_table_the_source_has_and_the_lake_never_marked_is_present() -> None:
    assert judge_table(on_source=True) is TableStanding.PRESENT
    assert judge_table(on_source=None, snapshot_stream_start=BEFORE_THE_DDL) is TableStanding.PRESENT


def test_a_table_the_source_lacks_is_gone_only_when_the_lake_vouches_it_joined() -> None:
    """Prerequisites: the lake holds its target (the DROP not applied yet); the plan: the departure mark."""
    assert judge_table(on_source=False, lake_holds_it=True) is TableStanding.GONE
    assert judge_table(on_source=False, left_at=DDL) is TableStanding.GONE
    assert judge_table(on_source=False) is TableStanding.NOT_FOUND


@pytest.mark.parametrize("on_source", [True, None])
def test_a_departed_table_waits_for_a_snapshot_taken_after_its_ddl(on_source: bool | None) -> None:
    """Admission (which does not ask the source) and a re-created table: an older snapshot would meet
    the same DDL again in its catch-up."""
    assert judge_table(on_source=on_source, left_at=DDL) is TableStanding.AWAITING_SNAPSHOT
    waiting = judge_table(on_source=on_source, left_at=DDL, snapshot_stream_start=BEFORE_THE_DDL)
    assert waiting is TableStanding.AWAITING_SNAPSHOT
    joins = judge_table(on_source=on_source, left_at=DDL, snapshot_stream_start=AFTER_THE_DDL)
    assert joins is TableStanding.PRESENT


@pytest.mark.parametrize("on_source", [True, None])
def test_a_stopped_table_stays_out_until_a_snapshot_replaces_it(on_source: bool | None) -> None:
    """The stop mark holds while the table's latest snapshot is the one it was streamed with
    (``Departure.holds_for``); a table the source then drops is gone."""
    assert judge_table(on_source=on_source, stopped=True) is TableStanding.STOPPED
    assert judge_table(on_source=on_source, stopped=False) is TableStanding.PRESENT
    assert judge_table(on_source=False, stopped=True) is TableStanding.GONE


def test_gone_awaiting_a_snapshot_and_stopped_are_out_of_the_pipeline_the_others_are_not() -> None:
    out = {standing for standing in TableStanding if standing.out_of_the_pipeline}
    assert out == {TableStanding.GONE, TableStanding.AWAITING_SNAPSHOT, TableStanding.STOPPED}
