"""The metrics catalogue: what docs/metrics.md lists is what the package emits, and how it emits."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk._shared.observability.metrics.base_stats_logger import NoStatsLogger
from airflow.sdk.observability import stats

from airflow_mysql_cdc.hooks import metrics
from tests.support.stats_recorder import recording_stats

DOCS = Path(__file__).resolve().parents[4] / "docs" / "metrics.md"
PACKAGE = Path(metrics.__file__).resolve().parents[1]


def test_legacy_names_follow_airflows_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__METRICS__LEGACY_NAMES_ON", "False")
    with recording_stats() as recorder:
        metrics.emit("mysql_cdc.apply.transactions", 1, pipeline="shop")
    assert [name for _, name, _, _ in recorder.calls] == ["mysql_cdc.apply.transactions"]


def test_a_broken_backend_costs_the_metric_not_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> Any:
        raise RuntimeError("the statsd client is broken")

    stats.initialize(factory=broken, export_legacy_names=True)
    try:
        metrics.emit("mysql_cdc.apply.transactions", 1, pipeline="shop")
    finally:
        stats.initialize(factory=NoStatsLogger, export_legacy_names=True)


def test_every_metric_is_documented_with_its_type_and_tags() -> None:
    text = DOCS.read_text()
    for metric in metrics.METRICS.values():
        row = re.search(rf"^\| `{re.escape(metric.name)}` \| (\w+) \| ([^|]*) \|", text, re.MULTILINE)
        assert row, f"{metric.name} is not in docs/metrics.md"
        assert row.group(1) == metric.type
        assert [tag.strip(" `") for tag in row.group(2).split(",")] == list(metric.tags)


def test_every_metric_the_package_emits_is_in_the_catalogue_and_no_name_holds_a_variable() -> None:
    """A name written in the code is one of ``METRICS``; a name built at run time (an f-string: the
    pipeline id in the name, as the resumability sensor's metrics once were) is refused."""
    literal = re.compile(r"""\bemit\(\s*(f?)["'](mysql_cdc\.[^"']*)["']""")
    emitted: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for formatted, name in literal.findall(path.read_text()):
            assert not formatted, f"{path.name} builds a metric name at run time: {name}"
            emitted.add(name)
    assert emitted == set(metrics.METRICS)
    assert not re.search(r"stats\.(incr|gauge|timing)\(|Stats\.(incr|gauge|timing)\(", _outside_emit())


def _outside_emit() -> str:
    """The package's source, without :func:`metrics.emit` itself: no other code calls the backend."""
    own = Path(metrics.__file__).resolve()
    return "".join(path.read_text() for path in PACKAGE.rglob("*.py") if path.resolve() != own)
