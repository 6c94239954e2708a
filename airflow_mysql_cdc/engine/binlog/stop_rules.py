"""When a binlog read ends: one engine, four rules, all decided on GTID sets and commit timestamps.

Invariant: a rule never splits a transaction and never skips one to look further. It is asked at
three moments only: before a transaction is consumed (``stop_before``: it then stays unconsumed),
after one was consumed (``satisfied``), and when the stream is idle (``on_idle``, driven by
replication heartbeats, which carry a binlog file and offset but no GTID). So the end position is
always a prefix of the binlog order: ``start | {the transactions before the stop}``.

- :class:`UntilGtidSet` stops once the target set is contained in the position.
- :class:`WithinGtidSet` is :class:`UntilGtidSet` that also stops before any transaction outside
  the target, so the position never leaves it (a table's catch-up to the pipeline's position).
- :class:`UntilCaughtUp` is ``UntilGtidSet(@@gtid_executed read when the read starts)``.
- :class:`UntilCommitTimestamp` consumes every transaction committed before the boundary and stops
  at the first one committed at or after it (prefix semantics: deterministic for one binlog). On an
  idle server no such transaction arrives, so once the server clock is past the boundary by
  ``settle_s`` it reads ``@@gtid_executed`` once and stops when the position contains it. The settle
  margin covers the gap between a transaction's commit timestamp (taken at binlog flush) and its
  GTID entering ``gtid_executed``; guarded by
  ``test_timestamp_boundary_terminates_on_an_idle_server`` and
  ``test_timestamp_boundary_gives_the_same_end_set_every_time``.

  It may also be given a *consistent point*: a set the position must contain before the read may
  end, whatever the boundary says. A snapshot's chunks each reflect the source at their own high
  watermark, so a table is exact only at a position containing every chunk's high watermark; a
  segment that starts at a snapshot therefore ends at ``max(boundary cut, consistent point)``: the
  first transaction committed at or after the boundary that comes after every transaction of the
  consistent point. Still a pure function of the binlog and the (recorded) consistent point, so a
  retry cuts at the same place. Guarded by
  ``test_a_first_run_and_a_joining_table_with_intervals_already_past_end_where_every_table_is_exact``.
- :class:`Live` never stops; the consumer closes the generator.
"""

from __future__ import annotations

from typing import Protocol

from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet


class ServerProbe(Protocol):
    """What rules may ask the server (through the reader's control connection)."""

    def gtid_executed(self) -> GtidSet: ...

    def now_us(self) -> int: ...


class TargetNotExecutedError(CdcError, ValueError):
    """The target set names transactions the server has not executed: the read could never end."""


class StopRule:
    """Default behaviour: never stop (the live rule)."""

    def begin(self, probe: ServerProbe, start: GtidSet) -> None:
        """Called once per read, before the stream opens."""

    def stop_before(self, gtid: Gtid, commit_timestamp_us: int) -> bool:
        return False

    def consumed(self, gtid: Gtid) -> None:
        """Called after each consumed transaction, before :meth:`satisfied`."""

    def satisfied(self) -> bool:
        return False

    def on_idle(self, probe: ServerProbe, position: GtidSet) -> None:
        """Called on each heartbeat; may read the server and change what :meth:`satisfied` says."""


class Live(StopRule):
    """Read forever; heartbeats keep idle checks and connection liveness working."""

    def __repr__(self) -> str:
        return "Live()"


class UntilGtidSet(StopRule):
    """Stop as soon as ``target`` is contained in the position."""

    def __init__(self, target: GtidSet) -> None:
        self.target = target
        self._remaining = GtidSet()
        self._remaining_count = 0

    def __repr__(self) -> str:
        return f"UntilGtidSet({self.target!r})"

    def begin(self, probe: ServerProbe, start: GtidSet) -> None:
        self._await(self.target - start)
        if self._remaining_count:
            not_executed = self._remaining - probe.gtid_executed()
            if not not_executed.is_empty():
                raise TargetNotExecutedError(
                    f"the stop target contains transactions the server has not executed ({not_executed}): "
                    "the read would never end. Take targets from this server's @@gtid_executed."
                )

    def _await(self, remaining: GtidSet) -> None:
        # Counting down avoids a set difference per transaction on the hot path.
        self._remaining = remaining
        self._remaining_count = remaining.count()

    def consumed(self, gtid: Gtid) -> None:
        if self._remaining_count and gtid in self._remaining:
            self._remaining_count -= 1

    def satisfied(self) -> bool:
        return self._remaining_count == 0


class WithinGtidSet(UntilGtidSet):
    """Read only transactions of ``target``; stop once it is contained, or before one outside it."""

    def __repr__(self) -> str:
        return f"WithinGtidSet({self.target!r})"

    def stop_before(self, gtid: Gtid, commit_timestamp_us: int) -> bool:
        return gtid not in self.target


class UntilCaughtUp(UntilGtidSet):
    """Stop once everything the server had executed when the read started (and ``at_least``) has
    been read."""

    def __init__(self, at_least: GtidSet | None = None) -> None:
        super().__init__(GtidSet())
        self.at_least = at_least or GtidSet()

    def __repr__(self) -> str:
        return "UntilCaughtUp()" if self.at_least.is_empty() else f"UntilCaughtUp(at_least={self.at_least!r})"

    def begin(self, probe: ServerProbe, start: GtidSet) -> None:
        self.target = probe.gtid_executed() | self.at_least
        self._await(self.target - start)  # executed (or to be waited for, like a consistent point)


class UntilCommitTimestamp(StopRule):
    """Consume transactions committed before ``boundary_us``; stop at the first at or after it that
    comes once the position contains ``consistent_point`` (empty: no such condition)."""

    def __init__(self, boundary_us: int, *, settle_s: float = 1.0, consistent_point: GtidSet | None = None):
        self.boundary_us = boundary_us
        self.settle_us = int(settle_s * 1_000_000)
        self.consistent_point = consistent_point or GtidSet()
        self._caught_up: UntilGtidSet | None = None
        self._consistent = UntilGtidSet(self.consistent_point)

    def __repr__(self) -> str:
        if self.consistent_point.is_empty():
            return f"UntilCommitTimestamp({self.boundary_us})"
        return f"UntilCommitTimestamp({self.boundary_us}, consistent_point={self.consistent_point!r})"

    def begin(self, probe: ServerProbe, start: GtidSet) -> None:
        self._caught_up = None
        # Not UntilGtidSet.begin: a consistent point the server lacks (a failover to a replica that
        # has not applied it yet) is waited for, not refused.
        self._consistent._await(self.consistent_point - start)

    def stop_before(self, gtid: Gtid, commit_timestamp_us: int) -> bool:
        return commit_timestamp_us >= self.boundary_us and self._consistent.satisfied()

    def consumed(self, gtid: Gtid) -> None:
        self._consistent.consumed(gtid)
        if self._caught_up is not None:
            self._caught_up.consumed(gtid)

    def satisfied(self) -> bool:
        return self._caught_up is not None and self._caught_up.satisfied() and self._consistent.satisfied()

    def on_idle(self, probe: ServerProbe, position: GtidSet) -> None:
        if self._caught_up is not None or probe.now_us() < self.boundary_us + self.settle_us:
            return
        # Read after the boundary has passed: every transaction committed before it is in here.
        executed_after_boundary = probe.gtid_executed()
        rule = UntilGtidSet(executed_after_boundary)
        rule._await(executed_after_boundary - position)
        self._caught_up = rule
