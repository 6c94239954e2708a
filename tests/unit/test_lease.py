"""The pipeline's lease, the one way every writer (sink, verification, maintenance) holds it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.state.lease import Lease
from airflow_mysql_cdc.engine.lake.state.pipeline_state import (
    RELEASED,
    PipelineBusyError,
    PipelineFencedError,
    PipelineStateStore,
)
from airflow_mysql_cdc.engine.values.gtid import GtidSet

START = GtidSet.parse("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")
LATER = GtidSet.parse("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9")


def _store(tmp_path: Path) -> PipelineStateStore:
    return PipelineStateStore(LakeLayout(str(tmp_path)).state, "shop")


def test_a_second_writer_is_refused_while_the_lease_is_held_and_let_in_once_it_is_released(
    tmp_path: Path,
) -> None:
    with Lease.claim(_store(tmp_path), "writer-a", START, lease_s=60) as held:
        with pytest.raises(PipelineBusyError, match="being written by writer-a"):
            Lease.claim(_store(tmp_path), "writer-b", START, lease_s=60)
        assert held.held
    assert not held.held
    state = _store(tmp_path).read()
    assert state is not None and state.owner == RELEASED
    with Lease.claim(_store(tmp_path), "writer-b", START, lease_s=60) as next_writer:
        assert next_writer.state.epoch == 2


def test_the_lease_is_released_when_the_work_raises(tmp_path: Path) -> None:
    with (
        pytest.raises(RuntimeError, match="the work failed"),
        Lease.claim(_store(tmp_path), "writer-a", START, lease_s=60),
    ):
        raise RuntimeError("the work failed")
    state = _store(tmp_path).read()
    assert state is not None and state.owner == RELEASED


def test_a_commit_keeps_position_and_batch_unless_given_and_renews_the_heartbeat(tmp_path: Path) -> None:
    lease = Lease.claim(_store(tmp_path), "writer-a", START, lease_s=60)
    claimed_at = lease.state.updated_at_us
    lease.commit(checked_versions={"target:db.t": 3})
    assert (lease.state.applied_gtids, lease.state.batch_seq) == (START, 0)
    assert lease.state.checked_versions == {"target:db.t": 3}
    lease.commit(LATER, 1)
    assert (lease.state.applied_gtids, lease.state.batch_seq) == (LATER, 1)
    assert lease.state.updated_at_us >= claimed_at
    lease.release()
    lease.release()  # a second release does nothing


def test_a_heartbeat_is_written_only_once_a_third_of_the_lease_passed(tmp_path: Path) -> None:
    lease = Lease.claim(_store(tmp_path), "writer-a", START, lease_s=0.3)
    version = lease.state.table_version
    lease.heartbeat_if_due()
    assert lease.state.table_version == version
    time.sleep(0.11)
    lease.heartbeat_if_due()
    assert lease.state.table_version == version + 1


def test_a_writer_whose_pipeline_was_claimed_by_another_is_fenced_at_its_next_commit(tmp_path: Path) -> None:
    stalled = Lease.claim(_store(tmp_path), "writer-a", START, lease_s=0)
    Lease.claim(_store(tmp_path), "writer-b", START, lease_s=0)  # writer-a stalled past its lease
    with pytest.raises(PipelineFencedError):
        stalled.assert_still_owner()
    with pytest.raises(PipelineFencedError):
        stalled.commit(LATER, 1)


def test_a_deferred_position_is_written_by_the_next_commit_and_never_lost_at_idle_or_release(
    tmp_path: Path,
) -> None:
    """One state commit per batch: batch N's position rides on the commit that intends batch N+1;
    an idle writer writes it at its heartbeat check, a finishing one with its release."""
    store = _store(tmp_path)
    lease = Lease.claim(store, "writer-a", START, lease_s=60)
    lease.commit(intents=lease.state.intending(1, LATER))
    lease.defer(LATER, 1)
    on_disk = store.read()
    assert on_disk is not None and (on_disk.applied_gtids, on_disk.intents) == (START, {1: LATER})
    assert (lease.state.applied_gtids, lease.state.batch_seq) == (LATER, 1)  # what the tables hold
    assert lease.state.reach == LATER and on_disk.reach == LATER
    further = GtidSet.parse("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-12")
    lease.commit(intents=lease.state.intending(2, further))  # the next batch's intent carries it
    on_disk = store.read()
    assert on_disk is not None and (on_disk.applied_gtids, on_disk.batch_seq) == (LATER, 1)
    assert on_disk.intents == {2: further}
    lease.defer(further, 2)
    lease.heartbeat_if_due()  # idle: long before a third of the lease, the position is written
    on_disk = store.read()
    assert on_disk is not None and (on_disk.applied_gtids, on_disk.batch_seq, on_disk.intents) == (
        further,
        2,
        {},
    )
    lease.defer(further, 2)
    lease.release()
    on_disk = store.read()
    assert on_disk is not None and on_disk.owner == RELEASED and on_disk.applied_gtids == further
