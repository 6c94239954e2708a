"""A run's conf read as actions: every mistake refused before anything is written, with what to fix."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from airflow_mysql_cdc.engine.lake.departures import Departure
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.runs import lake
from airflow_mysql_cdc.runs.actions import ResnapshotRequest, RunActionError, read_run_actions
from airflow_mysql_cdc.runs.segment import RunOrigin, plan_segment

TABLES = ["shop.orders", "shop.payments"]
UUID = "3E11FA47-71CA-11E1-9E33-C80AA9429562".lower()


def test_an_empty_conf_asks_for_nothing() -> None:
    for conf in (None, {}):
        actions = read_run_actions(conf, TABLES)
        assert not actions.any and actions.to_record() == []


def test_each_action_is_read_and_recorded_with_who_triggered_the_run() -> None:
    actions = read_run_actions(
        {"resnapshot": ["shop.orders", {"table": "shop.payments", "where": "id < 10"}], "pause": []},
        TABLES,
        triggered_by="alice",
    )
    assert actions.whole_tables == ("shop.orders",)
    assert actions.row_ranges == (ResnapshotRequest("shop.payments", where="id < 10"),)
    assert actions.to_record() == [
        {"action": "resnapshot", "table": "shop.orders", "triggered_by": "alice"},
        {"action": "resnapshot", "table": "shop.payments", "where": "id < 10", "triggered_by": "alice"},
    ]
    paused = read_run_actions({"pause": "shop.payments"}, TABLES)
    assert paused.pause == ("shop.payments",) and paused.to_record() == [
        {"action": "pause", "table": "shop.payments"}
    ]


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"resnaphot": ["shop.orders"]}, "keys this pipeline does not know: resnaphot. Known: resnapshot"),
        ({"pause": ["shop.refunds"]}, "shop.refunds is not one of this pipeline's tables"),
        (
            {"pause": ["shop.orders"], "resume": ["shop.orders"]},
            "cannot be paused and resumed in the same run",
        ),
        ({"pause": ["shop.orders"], "resnapshot": ["shop.orders"]}, "cannot be paused and re-snapshotted"),
        ({"resnapshot": [{"table": "shop.orders", "colour": "red"}]}, "unknown keys colour"),
        ({"resnapshot": [{"table": "shop.orders", "where": " "}]}, "where must be a non-empty SQL predicate"),
        (
            {"resnapshot": [{"table": "shop.orders", "where": "id > 1", "key_from": [1]}]},
            "give where or key_from/key_to, not both",
        ),
        (
            {"resnapshot": [{"table": "shop.orders", "key_to": 5}]},
            "key_to must be a list with one value per key",
        ),
        ({"rebase_checkpoint": "not-a-gtid-set", "confirm_rebase": True}, "is not a GTID set"),
        ({"confirm_rebase": True}, "confirm_rebase without rebase_checkpoint"),
        (
            {"rebase_checkpoint": f"{UUID}:1-5", "confirm_rebase": "yes"},
            "confirm_rebase must be true or false",
        ),
        (
            {"rebase_checkpoint": f"{UUID}:1-5"},
            'Either re-snapshot every table in the same run (add "resnapshot"',
        ),
        (
            {"rebase_checkpoint": f"{UUID}:1-5", "confirm_rebase": True, "pause": ["shop.orders"]},
            "cannot be combined with pause or resume",
        ),
    ],
)
def test_a_conf_that_cannot_be_done_as_written_is_refused_saying_what_to_fix(
    conf: dict, message: str
) -> None:
    with pytest.raises(RunActionError) as raised:
        read_run_actions(conf, TABLES)
    assert message in str(raised.value)


def test_a_rebase_is_accepted_confirmed_or_with_every_table_re_snapshotted() -> None:
    confirmed = read_run_actions({"rebase_checkpoint": f"{UUID}:1-5", "confirm_rebase": True}, TABLES)
    assert confirmed.confirmed_rebase
    assert confirmed.to_record() == [
        {"action": "rebase_checkpoint", "gtid_set": f"{UUID}:1-5", "confirmed": True}
    ]
    resnapshotted = read_run_actions({"rebase_checkpoint": f"{UUID}:1-5", "resnapshot": TABLES}, TABLES)
    assert not resnapshotted.confirmed_rebase


def test_the_plan_of_a_first_run_refuses_pauses_resumes_and_rebases() -> None:
    actions = read_run_actions({"pause": ["shop.orders"]}, TABLES)
    with pytest.raises(
        RunActionError, match="first run: it snapshots every table, so there is nothing to pause"
    ):
        plan_segment(RunOrigin(None), TABLES, "/unused", actions=actions)


def test_a_rebase_without_confirmation_plans_every_table_again_and_a_confirmed_one_keeps_them() -> None:
    loaded = RunOrigin(GtidSet.parse(f"{UUID}:1-9"), dict.fromkeys(TABLES, "s"))
    both = read_run_actions({"rebase_checkpoint": f"{UUID}:1-5", "resnapshot": TABLES}, TABLES)
    assert plan_segment(loaded, TABLES, "/unused", actions=both).to_xcom() == {
        "tables": TABLES, "restart": True, "rebase": True, "keep_members": False, "start_gtids": None,
    }  # fmt: skip
    confirmed = read_run_actions({"rebase_checkpoint": f"{UUID}:1-5", "confirm_rebase": True}, TABLES)
    assert plan_segment(loaded, TABLES, "/unused", actions=confirmed).to_xcom() == {
        "tables": [], "restart": False, "rebase": True, "keep_members": True, "start_gtids": f"{UUID}:1-5",
    }  # fmt: skip


def test_a_stopped_table_is_snapshotted_only_when_the_conf_asks_for_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Its lake copy was found wrong: the plan says so every run and never replaces it on its own."""
    mark = Departure("shop.orders", "", "stop", "its target was changed by another writer", "", "snap-1")
    progress = SimpleNamespace(snapshot_id="snap-1", complete=True, stream_start=GtidSet())
    monkeypatch.setattr(
        lake, "departure", lambda root, ref, options: mark if str(ref) == "shop.orders" else None
    )
    monkeypatch.setattr(lake, "snapshot_progress", lambda root, ref, options: progress)
    monkeypatch.setattr(lake, "pause", lambda root, ref, options: None)
    checkpoint = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-10"  # after the stopped table's snapshot
    loaded = RunOrigin(GtidSet.parse(checkpoint), {"shop.customers": "snap-2"})
    tables = ["shop.orders", "shop.customers"]
    with caplog.at_level(logging.WARNING):
        assert plan_segment(loaded, tables, "/lake").tables == ()
    assert f"not snapshotted unless the run's conf asks for it: {mark.describe()}" in caplog.text
    assert 'the conf {"resnapshot": ["shop.orders"]}' in caplog.text
    asked = read_run_actions({"resnapshot": ["shop.orders"]}, tables)
    plan = plan_segment(loaded, tables, "/lake", actions=asked)
    assert (plan.tables, plan.restart) == (("shop.orders",), True)
    # Once a snapshot replaced its rows, the mark no longer holds: it joins like any table.
    progress.snapshot_id = "snap-3"
    assert plan_segment(loaded, tables, "/lake").tables == ("shop.orders",)
