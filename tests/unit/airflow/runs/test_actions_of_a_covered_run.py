"""A run whose conf asks for actions, placed by ``load_checkpoint`` (issue 34, item 6): queued while a
catch-up covered its interval, it continues the chain's head and acts; cleared after later runs
published past its interval, it is refused in ``load_checkpoint``, before the sensor waits or anything
is written, with what to do instead. Under the real scheduler:
tests/integration/scheduler/test_pipeline_under_the_scheduler.py."""

from __future__ import annotations

import datetime
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord, SourceIdentity
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.runs import checkpoint_chain
from airflow_mysql_cdc.runs.actions import RunActionError

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
TABLES = ["shop.orders"]
CONF = {"resnapshot": ["shop.orders"]}
NOW = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
SECOND = datetime.timedelta(seconds=1)
MINUTE, HOUR = 60 * SECOND, 3600 * SECOND


def _record(run_id: str, start: datetime.timedelta, end: datetime.timedelta, gtid: int) -> CheckpointRecord:
    """Run ``run_id``'s record, its segment from ``start`` to ``end`` before now."""
    return CheckpointRecord(
        pipeline_id="shop", lake_root="/lake", source=SourceIdentity(UUID, "db", 3306),
        start_gtids=f"{UUID}:1-{gtid - 10}", end_gtids=f"{UUID}:1-{gtid}",
        segment_start=(NOW - start).isoformat(), segment_end=(NOW - end).isoformat(), run_id=run_id,
    )  # fmt: skip


FIRST = _record("scheduled__first", 24 * HOUR, 2 * HOUR, 20)
CATCH_UP = _record("scheduled__late", 2 * HOUR, MINUTE, 30)
"""A late scheduled run that caught up to a minute ago, past the action run's interval end."""
LATER = _record("scheduled__later", MINUTE, 10 * SECOND, 40)


@pytest.fixture
def chain(monkeypatch: pytest.MonkeyPatch) -> list[CheckpointRecord]:
    """The lake's log (the records the test puts in it), a lake holding them, a source that has them."""
    records: list[CheckpointRecord] = []
    monkeypatch.setattr(
        checkpoint_chain.lake, "checkpoint_log", lambda *args: SimpleNamespace(records=lambda: list(records))
    )
    monkeypatch.setattr(
        checkpoint_chain.lake,
        "pipeline_state",
        lambda *args: SimpleNamespace(applied_gtids=records[-1].end, members={"shop.orders": "s1"}),
    )
    server = SimpleNamespace(server_uuid=UUID, gtid_executed=GtidSet.parse(f"{UUID}:1-99"))
    monkeypatch.setattr(
        checkpoint_chain, "MySqlCdcHook", lambda conn_id: SimpleNamespace(get_server_state=lambda: server)
    )
    return records


def _load(interval_end: datetime.datetime, *, cleared: int = 0) -> dict[str, Any]:
    context = {
        "logical_date": interval_end,
        "data_interval_end": interval_end,
        "run_id": "manual__act",
        "dag_run": SimpleNamespace(conf=CONF, clear_number=cleared, triggering_user_name="alice"),
    }
    return checkpoint_chain.load_checkpoint(
        context, pipeline_id="shop", lake_root="/lake", mysql_cdc_conn_id="c", tables=TABLES
    )


def test_an_action_run_queued_behind_a_catch_up_that_covered_it_continues_the_head_and_acts(
    chain: list[CheckpointRecord], caplog: pytest.LogCaptureFixture
) -> None:
    chain += [FIRST, CATCH_UP]
    with caplog.at_level("INFO"):
        loaded = _load(NOW - 2 * MINUTE)  # triggered before the catch-up's end
    assert loaded["placement"] == "forward" and loaded["checkpoint"] == CATCH_UP.end_gtids
    assert loaded["previous_run_id"] == CATCH_UP.run_id
    assert "its conf asks for actions, so it carries them out from the head on" in caplog.text


def test_a_cleared_action_run_whose_interval_later_runs_published_past_is_refused_in_load_checkpoint(
    chain: list[CheckpointRecord],
) -> None:
    chain += [FIRST, CATCH_UP, LATER]
    with pytest.raises(RunActionError) as refused:
        _load(NOW - 2 * MINUTE, cleared=1)
    message = str(refused.value)
    assert message.startswith(
        "this run's conf asks for [{'action': 'resnapshot', 'table': 'shop.orders', 'triggered_by': "
        "'alice'}], but the run applies nothing: the interval ending "
    )
    assert f"is inside the segment of run {CATCH_UP.run_id}" in message
    assert "Nothing was done: this run was cleared after later runs published past its interval" in message
    assert "trigger a new run with this conf (the UI's trigger form, or airflow dags trigger" in message
    # The same run cleared while nothing was published after the catch-up: it acts, as it would have.
    chain.remove(LATER)
    assert _load(NOW - 2 * MINUTE, cleared=1)["placement"] == "forward"


def test_a_retry_of_an_action_run_that_published_republishes_its_record_and_acts_no_second_time(
    chain: list[CheckpointRecord],
) -> None:
    acted = _record("manual__act", MINUTE, 30 * SECOND, 35)
    chain += [FIRST, CATCH_UP, acted]
    loaded = _load(NOW - 2 * MINUTE, cleared=1)
    assert loaded["placement"] == "rerun" and loaded["record"]["run_id"] == "manual__act"
