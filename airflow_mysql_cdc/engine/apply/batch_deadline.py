"""When a live batch is cut: its oldest transaction is in Delta ``batch_max_seconds`` after its commit.

Invariant: ``batch_max_seconds`` bounds the time from a transaction's commit in MySQL to the commit
that puts it in the lake, not only the time it waits in the pending batch. A batch is therefore cut
``batch_max_seconds`` minus the expected commit time minus a tenth of the bound (:data:`HEADROOM`)
after its oldest transaction committed, where the expected commit time is the slowest of the last
few batches' commits: the bound then holds whenever the next commit is no slower than recent ones
by more than that tenth (thread wake-up, a commit slower than the last eight, the first batch,
which has no commit to go by). Measured (docs/benchmarks.md): at the default 1 s, 95% of rows are
in Delta within 0.9 s of their commit. The expectation is capped at half the
bound, so a slow lake still gathers batches of at least half of it rather than committing every
transaction on its own (the bound is then exceeded by the commit's excess, which the task log's lag
shows).

When it committed is read from the transaction's immediate commit timestamp (the server's clock)
against the reader thread's clock when it arrived: the difference is the binlog's delivery delay.
Clocks of two hosts differ, so that delay counts only between 0 and a quarter of the bound: a
server clock ahead of this host's makes it arrival time (as if delivered at once), one far behind
cuts batches at most a quarter of the bound early. A transaction read while the previous batch
committed counts that time as waited. Guarded by ``tests/unit/test_batch_deadline.py``.
"""

from __future__ import annotations

from collections import deque

RECENT_COMMITS = 8
"""How many of the latest batch commits the expected commit time looks at."""
HEADROOM = 0.1
"""The share of the bound kept in reserve for what the expected commit time does not foresee."""


class BatchDeadline:
    """The cut time of the pending batch, from its oldest arrival and recent commit durations."""

    def __init__(self, max_seconds: float) -> None:
        self.max_seconds = max_seconds
        self._recent: deque[float] = deque(maxlen=RECENT_COMMITS)

    @property
    def expected_commit_s(self) -> float:
        """The slowest recent commit, at most half the bound (module docstring)."""
        return min(max(self._recent, default=0.0), self.max_seconds / 2)

    def committed_at(self, arrival: float, arrival_wall: float, commit_timestamp_us: int) -> float:
        """When (on the ``arrival`` clock, ``time.monotonic``) MySQL committed a transaction that
        arrived then (``arrival_wall``: ``time.time`` at the same moment); module docstring."""
        delivery = arrival_wall - commit_timestamp_us / 1_000_000
        return arrival - min(max(delivery, 0.0), self.max_seconds / 4)

    def due_at(self, oldest_arrival: float) -> float:
        """The monotonic time at which the batch whose oldest transaction arrived then is cut."""
        return oldest_arrival + self.max_seconds * (1 - HEADROOM) - self.expected_commit_s

    def committed(self, seconds: float) -> None:
        """Record how long the commit of a cut batch took."""
        self._recent.append(seconds)
