"""Stop rules decide on GTIDs and commit timestamps only, and always at a transaction boundary."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.binlog.stop_rules import (
    Live,
    TargetNotExecutedError,
    UntilCaughtUp,
    UntilCommitTimestamp,
    UntilGtidSet,
)
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def gtids(text: str) -> GtidSet:
    return GtidSet.parse(f"{UUID}:{text}")


class FakeProbe:
    def __init__(self, executed: str, now_us: int = 0) -> None:
        self.executed = gtids(executed)
        self.now = now_us
        self.executed_reads = 0

    def gtid_executed(self) -> GtidSet:
        self.executed_reads += 1
        return self.executed

    def now_us(self) -> int:
        return self.now


def test_until_gtid_set_is_satisfied_once_every_missing_target_gtid_was_consumed():
    rule = UntilGtidSet(gtids("1-5"))
    rule.begin(FakeProbe("1-9"), gtids("1-2"))
    for number in (3, 4):
        rule.consumed(Gtid(UUID, number))
        assert not rule.satisfied()
    rule.consumed(Gtid(UUID, 9))  # outside the target: does not count
    assert not rule.satisfied()
    rule.consumed(Gtid(UUID, 5))
    assert rule.satisfied()


def test_until_gtid_set_already_contained_in_the_start_is_satisfied_at_once():
    rule = UntilGtidSet(gtids("1-3"))
    rule.begin(FakeProbe("1-3"), gtids("1-5"))
    assert rule.satisfied()


def test_until_gtid_set_refuses_a_target_the_server_never_executed():
    with pytest.raises(TargetNotExecutedError, match="7-8"):
        UntilGtidSet(gtids("1-8")).begin(FakeProbe("1-6"), GtidSet())


def test_until_caught_up_reads_gtid_executed_once_at_begin():
    probe = FakeProbe("1-3")
    rule = UntilCaughtUp()
    rule.begin(probe, gtids("1"))
    probe.executed = gtids("1-10")
    for number in (2, 3):
        rule.consumed(Gtid(UUID, number))
    assert rule.satisfied() and probe.executed_reads == 1


def test_timestamp_boundary_stops_before_the_first_transaction_at_or_after_it():
    rule = UntilCommitTimestamp(1_000)
    rule.begin(FakeProbe("1-3"), GtidSet())
    assert not rule.stop_before(Gtid(UUID, 1), 999)
    assert rule.stop_before(Gtid(UUID, 2), 1_000)
    assert rule.stop_before(Gtid(UUID, 3), 5_000)


def test_timestamp_boundary_on_an_idle_server_waits_for_the_settle_margin_then_catches_up():
    rule = UntilCommitTimestamp(1_000_000, settle_s=0.5)
    probe = FakeProbe("1-4", now_us=1_200_000)
    rule.begin(probe, gtids("1"))
    rule.consumed(Gtid(UUID, 2))
    rule.on_idle(probe, gtids("1-2"))
    assert not rule.satisfied() and probe.executed_reads == 0  # clock not past boundary + settle
    probe.now = 1_500_000
    rule.on_idle(probe, gtids("1-2"))
    assert not rule.satisfied() and probe.executed_reads == 1  # 3 and 4 still to read
    rule.consumed(Gtid(UUID, 3))
    rule.consumed(Gtid(UUID, 4))
    assert rule.satisfied()
    rule.on_idle(probe, gtids("1-4"))
    assert probe.executed_reads == 1  # read once, after the boundary


def test_live_never_stops():
    rule = Live()
    rule.begin(FakeProbe("1"), GtidSet())
    rule.on_idle(FakeProbe("1", now_us=10**18), gtids("1"))
    assert not rule.stop_before(Gtid(UUID, 1), 10**18) and not rule.satisfied()


def test_timestamp_boundary_does_not_stop_before_the_consistent_point_is_contained():
    # A snapshot's last chunk saw the source at 1-4: the segment may not end before 4, even though
    # transactions 2.. committed after the boundary. It then stops at the next one after the boundary.
    rule = UntilCommitTimestamp(1_000, consistent_point=gtids("1-4"))
    rule.begin(FakeProbe("1-9"), gtids("1"))
    for number in (2, 3, 4):
        assert not rule.stop_before(Gtid(UUID, number), 5_000)
        rule.consumed(Gtid(UUID, number))
    assert rule.stop_before(Gtid(UUID, 5), 5_000)


def test_timestamp_boundary_after_the_consistent_point_cuts_where_the_boundary_says():
    rule = UntilCommitTimestamp(1_000, consistent_point=gtids("1-2"))
    rule.begin(FakeProbe("1-9"), gtids("1"))
    assert not rule.stop_before(Gtid(UUID, 2), 10)
    rule.consumed(Gtid(UUID, 2))
    assert not rule.stop_before(Gtid(UUID, 3), 999)
    rule.consumed(Gtid(UUID, 3))
    assert rule.stop_before(Gtid(UUID, 4), 1_000)


def test_timestamp_boundary_on_an_idle_server_is_not_satisfied_without_the_consistent_point():
    # A failover to a replica that has not applied the snapshot's watermarks yet: wait for them.
    rule = UntilCommitTimestamp(1_000_000, settle_s=0.5, consistent_point=gtids("1-6"))
    probe = FakeProbe("1-4", now_us=2_000_000)
    rule.begin(probe, gtids("1-4"))
    rule.on_idle(probe, gtids("1-4"))
    assert not rule.satisfied()
    for number in (5, 6):
        rule.consumed(Gtid(UUID, number))
    assert rule.satisfied()


def test_until_caught_up_waits_for_a_consistent_point_beyond_gtid_executed():
    rule = UntilCaughtUp(at_least=gtids("1-5"))
    rule.begin(FakeProbe("1-3"), gtids("1-3"))
    assert not rule.satisfied()
    rule.consumed(Gtid(UUID, 4))
    rule.consumed(Gtid(UUID, 5))
    assert rule.satisfied()
