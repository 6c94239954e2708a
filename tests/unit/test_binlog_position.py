"""The cheap position tracker always equals start | consumed, the GtidSet it stands for."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_mysql_cdc.engine.binlog.position import PositionTracker
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet

UUIDS = ["3e11fa47-71ca-11e1-9e33-c80aa9429562", "8a94f357-aab4-11df-86ab-c80aa9429562"]

gtids = st.builds(Gtid, st.sampled_from(UUIDS), st.integers(min_value=1, max_value=60))
start_sets = st.lists(gtids, max_size=30).map(GtidSet.of)


@settings(max_examples=300, deadline=None)
@given(start=start_sets, consumed=st.lists(gtids, max_size=40), probes=st.lists(gtids, max_size=20))
def test_tracker_equals_start_united_with_every_added_gtid(start, consumed, probes):
    tracker = PositionTracker(start)
    expected = start
    for index, gtid in enumerate(consumed):
        tracker.add(gtid)
        expected = expected.add(gtid)
        if index % 7 == 0:  # materialising in between must not lose pending intervals
            assert tracker.value == expected
    for gtid in probes + consumed:
        assert (gtid in tracker) == (gtid in expected)
    assert tracker.value == expected


def test_tagged_start_sets_are_kept_and_answer_membership():
    start = GtidSet.parse(f"{UUIDS[0]}:1-3:etl:5")
    tracker = PositionTracker(start)
    tracker.add(Gtid(UUIDS[0], 4))
    assert tracker.value == GtidSet.parse(f"{UUIDS[0]}:1-4:etl:5")
    assert Gtid(UUIDS[0], 5, "etl") in tracker
    assert Gtid(UUIDS[0], 5) not in tracker
