"""Splitting a known segment into GTID ranges for parallel readers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.gtid_ranges import split_segment

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
OTHER = "4e11fa47-71ca-11e1-9e33-c80aa9429562"


def _set(numbers: set[int]) -> GtidSet:
    return GtidSet({(UUID, ""): [(n, n) for n in numbers]})


@settings(max_examples=200)
@given(
    segment_numbers=st.sets(st.integers(1, 400), min_size=1, max_size=120),
    start_numbers=st.sets(st.integers(1, 400), max_size=120),
    parts=st.integers(1, 9),
)
def test_ranges_are_disjoint_ordered_balanced_and_cover_exactly_the_segment(
    segment_numbers: set[int], start_numbers: set[int], parts: int
) -> None:
    start = _set(start_numbers - segment_numbers)
    end = start | _set(segment_numbers)
    plan = split_segment(start, end, parts)
    segment = end - start
    assert plan.reason_not_split is None
    union = GtidSet()
    for range_gtids in plan.ranges:
        assert not range_gtids.is_empty()
        assert (union & range_gtids).is_empty()
        union |= range_gtids
    assert union == segment
    assert len(plan.ranges) == min(parts, segment.count())
    numbers = [[gtid.number for gtid in range_gtids] for range_gtids in plan.ranges]
    assert all(max(left) < min(right) for left, right in zip(numbers, numbers[1:], strict=False))
    sizes = [len(n) for n in numbers]
    assert max(sizes) - min(sizes) <= 1


def test_reader_start_is_the_end_except_its_range_and_the_first_gtid_of_the_next_range() -> None:
    start, end = GtidSet.parse(f"{UUID}:1-10"), GtidSet.parse(f"{UUID}:1-20")
    plan = split_segment(start, end, 2)
    assert [str(r) for r in plan.ranges] == [f"{UUID}:11-15", f"{UUID}:16-20"]
    assert str(plan.reader_start(0)) == f"{UUID}:1-10:17-20"
    assert str(plan.reader_start(1)) == f"{UUID}:1-15"


def test_segment_of_two_server_uuids_is_not_split() -> None:
    start = GtidSet.parse(f"{UUID}:1-10")
    end = GtidSet.parse(f"{UUID}:1-20,{OTHER}:1-5")
    plan = split_segment(start, end, 4)
    assert plan.ranges == (end - start,)
    assert plan.reason_not_split is not None and "more than one server UUID" in plan.reason_not_split


def test_empty_segment_has_no_ranges_and_an_end_without_the_start_is_refused() -> None:
    executed = GtidSet.parse(f"{UUID}:1-10")
    assert split_segment(executed, executed, 3).ranges == ()
    with pytest.raises(ValueError, match="does not contain its start"):
        split_segment(GtidSet.parse(f"{UUID}:1-11"), executed, 2)
