"""The live batch's cut time: the bound is arrival to Delta, so the expected commit comes off it."""

from __future__ import annotations

import queue
import threading
import time
from types import SimpleNamespace

from airflow_mysql_cdc.engine.apply.batch_deadline import RECENT_COMMITS, BatchDeadline
from airflow_mysql_cdc.engine.apply.reading import _drain


def test_a_first_batch_is_cut_at_the_bound_less_its_headroom() -> None:
    assert BatchDeadline(1.0).due_at(100.0) == 100.9


def test_the_slowest_recent_commit_is_taken_off_the_bound() -> None:
    deadline = BatchDeadline(1.0)
    for seconds in (0.05, 0.2, 0.1):
        deadline.committed(seconds)
    assert abs(deadline.due_at(100.0) - 100.7) < 1e-9


def test_a_slow_commit_counts_only_while_it_is_recent() -> None:
    deadline = BatchDeadline(1.0)
    deadline.committed(0.3)
    for _ in range(RECENT_COMMITS):
        deadline.committed(0.1)
    assert deadline.expected_commit_s == 0.1


def test_a_slow_lake_still_gathers_batches_of_half_the_bound() -> None:
    deadline = BatchDeadline(2.0)
    deadline.committed(5.0)
    assert abs(deadline.due_at(10.0) - 10.8) < 1e-9


class _Applier:
    """Counts what ``_drain`` gives it and where it cuts (the sink's side is not this test's)."""

    def __init__(self) -> None:
        self.pending: list[object] = []
        self.pending_rows = 0
        self.cuts: list[int] = []
        self.result = SimpleNamespace(batches=0)
        self.sink = SimpleNamespace(heartbeat_if_due=lambda: None)

    def add(self, transaction: object) -> None:
        self.pending.append(transaction)
        self.pending_rows += 1

    def cut(self) -> None:
        self.cuts.append(len(self.pending))
        self.pending, self.pending_rows = [], 0
        self.result.batches += 1

    def report_if_due(self, interval_s: float) -> None:
        pass


def test_a_backlog_past_its_deadline_goes_into_one_batch_not_one_per_transaction() -> None:
    """Transactions that arrived long ago (the reader ran ahead while a batch committed) are all due
    at once: the batch takes what waits in the queue before it is cut."""
    waiting: queue.Queue[object] = queue.Queue()
    long_ago = time.monotonic() - 60
    for _ in range(50):
        waiting.put((long_ago, time.time() - 60, SimpleNamespace(commit_timestamp_us=0)))
    thread = SimpleNamespace(queue=waiting)
    applier = _Applier()
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    config = SimpleNamespace(batch_max_seconds=0.2, batch_max_rows=10_000, progress_interval_s=60.0)
    _drain(thread, applier, config, stop)  # type: ignore[arg-type]
    assert applier.cuts == [50]


def test_the_bound_counts_from_the_commit_in_mysql_and_a_skewed_clock_moves_it_at_most_a_quarter() -> None:
    deadline = BatchDeadline(1.0)
    arrival, wall = 500.0, 1_700_000_000.0
    committed_us = int((wall - 0.04) * 1_000_000)  # delivered 40 ms after its commit
    assert abs(deadline.committed_at(arrival, wall, committed_us) - 499.96) < 1e-6
    ahead_us = int((wall + 3) * 1_000_000)  # the server's clock runs ahead of this host's
    assert deadline.committed_at(arrival, wall, ahead_us) == arrival
    behind_us = int((wall - 30) * 1_000_000)  # far behind: at most a quarter of the bound earlier
    assert deadline.committed_at(arrival, wall, behind_us) == arrival - 0.25
