"""A position is stale when the server moved on and the checkpoint has not, for longer than allowed."""

from __future__ import annotations

import datetime

from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.staleness import judge_staleness

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
NOW = datetime.datetime(2026, 11, 20, 12, 0, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)


def test_an_idle_server_never_makes_an_old_checkpoint_stale() -> None:
    idle = judge_staleness(
        GtidSet.parse(f"{UUID}:1-9"), GtidSet.parse(f"{UUID}:1-9"), NOW - 30 * DAY, NOW, DAY
    )
    assert not idle.stale and idle.behind_s is None


def test_a_checkpoint_behind_the_server_for_longer_than_allowed_is_stale() -> None:
    stale = judge_staleness(
        GtidSet.parse(f"{UUID}:1-9"), GtidSet.parse(f"{UUID}:1-12"), NOW - 3 * DAY, NOW, 2 * DAY
    )
    assert stale.stale and stale.behind_s == 3 * 86400
    assert stale.message.startswith(
        "stale position: the checkpoint covers data up to 2026-11-17 12:00:00 UTC"
    )
    assert "3 transaction(s) it lacks, more than stale_after_hours (2 d)" in stale.message
    assert stale.to_dict()["waiting_transactions"] == 3


def test_a_checkpoint_behind_for_less_than_allowed_or_of_unknown_age_is_not_stale() -> None:
    checkpoint, executed = GtidSet.parse(f"{UUID}:1-9"), GtidSet.parse(f"{UUID}:1-12")
    assert not judge_staleness(checkpoint, executed, NOW - DAY, NOW, 2 * DAY).stale
    assert not judge_staleness(checkpoint, executed, None, NOW, 2 * DAY).stale
    assert not judge_staleness(checkpoint, executed, NOW - 9 * DAY, NOW, None).stale  # switched off
