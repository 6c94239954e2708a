"""One writer's hold on a pipeline: claimed, renewed when due, committed through, released.

Invariant: every writer of a pipeline's tables (the binlog sink, a verification, a maintenance run)
writes only while it holds the pipeline's lease, and holds it through one :class:`Lease`. The lease
is the state row of :mod:`.pipeline_state`: a claim raises the epoch (fencing every older writer),
every state commit is a heartbeat, and a release lets the next writer claim at once. So the rules
"renew at least every third of the lease", "release however the work ends" and "an older writer's
next commit fails" are written here once, not in each writer.

A lease is a context manager: ``with Lease.claim(store, owner, start, lease_s=60) as lease:``
releases it on the way out, whether the work ended or raised. A writer that is killed releases
nothing; its successor waits out the heartbeat's age (``PipelineBusyError``, retryable) unless the
owner ran on the same host and its process is gone. Guarded by test_single_writer.py and
tests/unit/test_lease.py.

A batch's position may be *deferred* (:meth:`Lease.defer`): written by the lease's next commit
instead of one of its own. The sink defers every plain batch, so the commit that intends batch
``N + 1`` also records batch ``N``'s position, and a live batch costs one state commit, not two.
That changes nothing a reader of the lake relies on: the state's applied set only ever lags what
the tables hold, and batch ``N``'s intent (its number and position, written before its tables
committed) stays in the state until a commit records that position, which is exactly the state a
crash between a batch's table commits and its position commit always left
(``test_crash_between_table_commits_replays_nothing_twice``, the kill -9 soak). An idle writer
records a deferred position at its next heartbeat check (:meth:`heartbeat_if_due`), a releasing one
with its release.
"""

from __future__ import annotations

import time
from dataclasses import replace
from types import TracebackType

from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineState, PipelineStateStore
from airflow_mysql_cdc.engine.values.gtid import GtidSet


class Lease:
    """The pipeline's lease while one writer holds it (see the module docstring)."""

    def __init__(self, store: PipelineStateStore, state: PipelineState, lease_s: float) -> None:
        """Hold ``state``, which ``store.claim`` returned; prefer :meth:`claim`."""
        self.store = store
        self.lease_s = lease_s
        self._state: PipelineState | None = state
        self._renewed = time.monotonic()
        self._deferred: tuple[GtidSet, int] | None = None
        """A batch's position and number its tables hold and the state does not record yet."""

    @classmethod
    def claim(
        cls, store: PipelineStateStore, owner: str, initial_applied: GtidSet, *, lease_s: float
    ) -> Lease:
        """Become the pipeline's only writer (``PipelineBusyError`` while another one's lease runs)."""
        return cls(store, store.claim(owner, initial_applied, lease_s=lease_s), lease_s)

    @property
    def held(self) -> bool:
        return self._state is not None

    @property
    def state(self) -> PipelineState:
        """The state as this writer last wrote it, with a deferred position as if written (module doc)."""
        assert self._state is not None, "the lease was released"
        if self._deferred is None:
            return self._state
        applied, batch_seq = self._deferred
        return replace(self._state, applied_gtids=applied, batch_seq=batch_seq)

    def defer(self, applied: GtidSet, batch_seq: int) -> None:
        """Record batch ``batch_seq``'s position with the next commit (its intent holds it until then)."""
        assert self._state is not None, "the lease was released"
        self._deferred = (applied, batch_seq)

    def commit(
        self,
        applied: GtidSet | None = None,
        batch_seq: int | None = None,
        *,
        members: dict[str, str] | None = None,
        intents: dict[int, GtidSet] | None = None,
        checked_versions: dict[str, int] | None = None,
    ) -> PipelineState:
        """Record progress (by default the position and batch number stay); also a heartbeat.

        ``PipelineFencedError`` if another writer claimed the pipeline since this one's last commit.
        """
        state = self.state
        self._state = self.store.commit(
            state,
            state.applied_gtids if applied is None else applied,
            state.batch_seq if batch_seq is None else batch_seq,
            members=members,
            intents=intents,
            checked_versions=checked_versions,
        )
        self._deferred = None
        self._renewed = time.monotonic()
        return self._state

    def heartbeat_if_due(self) -> None:
        """Renew the lease when a third of it passed since the last commit, and record a deferred
        position (an idle writer: no next batch will carry it)."""
        if self._state is not None and (
            self._deferred is not None or time.monotonic() - self._renewed >= self.lease_s / 3
        ):
            self.commit()

    def assert_still_owner(self) -> None:
        """``PipelineFencedError`` if another writer claimed the pipeline since the last commit."""
        self.store.assert_still_owner(self.state)

    def release(self) -> None:
        """Let the next writer claim at once; a second call does nothing."""
        if self._state is not None:
            state = self.state
            self._state = self._deferred = None
            self.store.commit(state, state.applied_gtids, state.batch_seq, release=True)

    def __enter__(self) -> Lease:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
