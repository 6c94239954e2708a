"""The lake's write path against a plain reference: every key type at its edges, every layout, both modes.

A MERGE plan made for speed once duplicated rows whose BIGINT UNSIGNED key was 2^63 or more, every run
green (issue 33): delta-rs writes the statistics of decimal columns through a float, and its early
file filter (``streamed_exec=False``) pruned the files that held those keys. So a plan is proven
here, not asserted: workloads of inserts, updates, deletes and key moves go through the project's
own sink into targets laid out every way a lake can be, in each execution mode, and the target and
the changelog must equal a plain in-memory reference after every batch; then delta-rs and DuckDB's
Delta reader, each with its own file skipping, must find every row by its key.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from airflow_mysql_cdc.engine.lake import table_writes
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
from airflow_mysql_cdc.engine.lake.maintenance.steps import MaintainedTable, maintain_table
from airflow_mysql_cdc.engine.lake.merge_plan import MergePlan
from tests.support.write_path import (
    KEY_SHAPES,
    LAYOUTS,
    SINGLE_KEYS_BY_NAME,
    KeyShape,
    Lake,
    Reference,
    Step,
    draw_batch,
    duckdb_connection,
    expected_changelog,
    expected_target,
    initial_rows,
    layout_fresh,
    readers_missing_rows,
)

EXAMPLES = int(os.environ.get("AIRFLOW_MYSQL_CDC_WRITE_PATH_EXAMPLES", "1"))
"""Random workloads per key type, each over every edge value too: one in every scripts/test (about 2
minutes of CPU for the 34 key shapes), more for a long local run (docs/testing.md)."""

MODES = {"streamed": True, "early filter": False}
"""delta-rs's two MERGE execution modes (``streamed_exec``)."""


def _forcing(streamed_exec: bool) -> Any:
    planned = table_writes.merge_plan

    def plan(source: Any, key: Any) -> MergePlan:
        return dataclasses.replace(planned(source, key), streamed_exec=streamed_exec)

    return plan


def _workload(data: st.DataObject, shape: KeyShape, rows: dict) -> list[list[Step]]:
    """Three batches: every edge key updated, then two drawn batches of any change."""
    serial = itertools.count(1_000_000)
    scratch = Reference(dict(rows))
    first = [Step("update", key, next(serial)) for key in shape.edge_keys()]
    for step in first:
        scratch.apply(step)
    drawn = [draw_batch(data.draw, shape, scratch, data.draw(st.integers(1, 12)), serial) for _ in range(2)]
    return [first, *drawn]


@pytest.mark.parametrize("shape", KEY_SHAPES, ids=lambda shape: shape.name)
@settings(
    max_examples=EXAMPLES,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
@given(data=st.data())
def test_merges_equal_a_plain_reference_for_every_key_type_layout_and_mode(
    shape: KeyShape,
    data: st.DataObject,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    duckdb: Any,
) -> None:
    rows = initial_rows(shape, data.draw(st.lists(shape.keys(), max_size=12), label="more keys"))
    soft_deletes = data.draw(st.booleans(), label="soft deletes")
    batches = _workload(data, shape, rows)
    for layout_name, layout in LAYOUTS.items():
        root = tmp_path_factory.mktemp("lake")
        base = Lake(root / "base", shape, soft_deletes)
        laid_out = Reference()
        layout(base, rows, laid_out)
        for mode, streamed_exec in MODES.items():
            lake = base.copy(root / mode.replace(" ", "-"))
            logged = lake.changelog_rows()
            reference = Reference(dict(laid_out.rows))
            monkeypatch.setattr(table_writes, "merge_plan", _forcing(streamed_exec))
            with lake:
                for number, steps in enumerate(batches, start=1):
                    before = dict(reference.rows)
                    for step in steps:
                        reference.apply(step)
                    lake.apply(steps, before)
                    where = f"{shape.name}: layout {layout_name}, {mode}, batch {number}"
                    assert lake.target_rows() == expected_target(shape, reference, soft_deletes), where
            monkeypatch.undo()
            expected = sorted(logged + expected_changelog(shape, reference))
            assert lake.changelog_rows() == expected, f"{shape.name}: layout {layout_name}, {mode}: changelog"
        if layout_name == "legacy":  # files written before the statistics became exact: rewritten
            maintain(lake)
        for path in (lake.target, lake.changelog) if layout_name in ("fresh", "legacy") else (lake.target,):
            missing = readers_missing_rows(path, "k0", duckdb)
            assert not missing, f"{shape.name}: layout {layout_name}, {path}: readers skipped rows: {missing}"


def maintain(lake: Lake) -> None:
    """The built-in maintenance of the lake's target and changelog."""
    policy = MaintenancePolicy()
    key = lake.shape.table_shape.primary_key
    maintain_table(
        DeltaTable(lake.target), MaintainedTable(lake.target, "target", "db.t", key[0], key), policy
    )
    maintain_table(DeltaTable(lake.changelog), MaintainedTable(lake.changelog, "changelog", "db.t"), policy)


@pytest.fixture(scope="module")
def duckdb() -> Any:
    return duckdb_connection()


_RANGES = {
    "keys 0..3000": 0,
    "keys around 2^62": 2**62,
    "keys across 2^63": 2**63 - 1500,
    "keys near 2^64": 2**64 - 3001,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("first_key", _RANGES.values(), ids=_RANGES.keys())
def test_updates_of_bigint_unsigned_keys_update_their_rows_and_insert_none_in_both_modes(
    first_key: int, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33's reproduction on the sink: four files of BIGINT UNSIGNED keys, five of them updated.
    With the early filter, keys from 2^63 on were inserted a second time (2 updated, 3 inserted
    across 2^63; 0 and 5 near 2^64)."""
    shape = SINGLE_KEYS_BY_NAME["bigint unsigned"]
    lake = Lake(tmp_path / "lake", shape, soft_deletes=False)
    rows = {(first_key + offset,): 0 for offset in range(3001)}
    reference = Reference()
    layout_fresh(lake, rows, reference)
    assert lake.files(lake.target) == 4
    updated = [(first_key + offset,) for offset in (5, 1500, 2500, 2900, 3000)]
    monkeypatch.setattr(table_writes, "merge_plan", _forcing(MODES[mode]))
    with lake:
        lake.apply([Step("update", key, 1) for key in updated], dict(reference.rows))
        metrics = lake.last_merge
    assert (metrics["num_target_rows_updated"], metrics["num_target_rows_inserted"]) == (5, 0)
    target = lake.target_rows()
    assert len(target) == len(rows) and len({key for key, _, _ in target}) == len(rows)
    assert sorted(key[0] for key, value, _ in target if value == 1) == [key[0] for key in updated]
