"""The suite's own set-up: how scripts/test spreads the tests over its two workers."""

from __future__ import annotations

import pytest


def test_every_xdist_group_keeps_its_tests_on_one_worker(request: pytest.FixtureRequest) -> None:
    """With ``--dist loadgroup`` (scripts/test), each test of an ``xdist_group`` carries the group in
    its node id: that is how pytest-xdist sends a group to one worker. A pytest release that drops it
    (9.2 did, with pytest-xdist 3.8) runs the groups' shared Airflow deployment and Spark cluster once
    per worker instead: the suite still passes, minutes slower, past its CI budget."""
    if not request.config.getoption("loadgroup", default=False):
        pytest.skip("not run with --dist loadgroup: no group to keep together")
    lost = [
        item.nodeid
        for item in request.session.items
        if item.get_closest_marker("xdist_group") and "@" not in item.nodeid
    ]
    assert not lost, (
        f"pytest-xdist ignored xdist_group for {len(lost)} test(s), e.g. {lost[0]}: this pytest and "
        "pytest-xdist do not work together (pytest-dev/pytest-xdist#1386); install the versions "
        "pyproject.toml pins (scripts/bootstrap)."
    )
