"""Metrics of the operators' work through Airflow's stats interface (StatsD, Datadog, OpenTelemetry).

Invariant: every metric is emitted on the Airflow side, once, after the application's result is
known (the result file the operator reads back): the engine, which runs inside Spark on machines
without Airflow, emits nothing, and a retried or cleared run that applies nothing emits counters of
zero. Emitting never fails a task: a broken metrics backend costs the metrics, not the run.

Names follow Airflow's own metrics (Airflow 3.2+): the name holds no variables and the dimensions
are tags (``pipeline``, ``table``), which Datadog, OpenTelemetry and StatsD with
``statsd_influxdb_enabled`` carry. A plain StatsD server has no tags, so, like Airflow's "legacy"
names, each metric is also emitted with its tags in the name when ``[metrics] legacy_names_on`` is
true (Airflow's default): ``mysql_cdc.apply.rows.<pipeline>.<table>``, a ``.`` inside a value
written ``__`` (``shop.orders`` -> ``shop__orders``) so the name keeps its segments, as Airflow does
for a task id inside a task group. Every metric is listed in docs/metrics.md, with its type, tags
and meaning; ``METRICS`` below is that list, and a test holds the two together.

Guarded by tests/unit/airflow/operators/test_metrics.py (emission with the backend replaced) and
tests/integration/test_binlog_apply_operator.py (a StatsD listener on loopback receives them).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from airflow_mysql_cdc.engine.apply.config import ApplyResult
from airflow_mysql_cdc.engine.lake.maintenance.report import MaintenanceReport
from airflow_mysql_cdc.engine.verify.report import VerifyReport

log = logging.getLogger(__name__)

PREFIX = "mysql_cdc"

MetricType = Literal["counter", "gauge", "timer"]


@dataclass(frozen=True)
class Metric:
    """One metric the package emits: its name (without Airflow's ``statsd_prefix``), type, tags."""

    name: str
    type: MetricType
    tags: tuple[str, ...]
    meaning: str


METRICS = {
    metric.name: metric
    for metric in (
        Metric(
            "mysql_cdc.apply.transactions",
            "counter",
            ("pipeline",),
            "Transactions of the tracked tables applied by a binlog application.",
        ),
        Metric(
            "mysql_cdc.apply.table_transactions",
            "counter",
            ("pipeline", "table"),
            "Applied transactions that changed the table (a transaction changing two tables counts "
            "for each).",
        ),
        Metric(
            "mysql_cdc.apply.rows",
            "counter",
            ("pipeline", "table"),
            "Row changes (inserts, updates, deletes) applied to a table's lake tables.",
        ),
        Metric(
            "mysql_cdc.apply.lag_seconds",
            "gauge",
            ("pipeline",),
            "At the end of an application: seconds between the last applied transaction's commit "
            "and the end of the application (not set when it applied nothing).",
        ),
        Metric(
            "mysql_cdc.apply.duration",
            "timer",
            ("pipeline",),
            "How long the binlog application ran (milliseconds).",
        ),
        Metric(
            "mysql_cdc.apply.table_stopped",
            "gauge",
            ("pipeline", "table"),
            "1 while the table is stopped (its lake copy was found wrong: a batch's MERGE did not do "
            "what its events imply, or another writer changed its rows) and not re-snapshotted since, "
            "else 0; set by every application for each of its tables.",
        ),
        Metric(
            "mysql_cdc.apply.table_stops",
            "counter",
            ("pipeline", "table"),
            "Times an application stopped the table (0 for every other table it applies).",
        ),
        Metric(
            "mysql_cdc.binlog.bytes_read",
            "counter",
            ("pipeline",),
            "Binlog event bytes the application's reader received from the server (a parallel "
            "catch-up's range readers on the executors are not counted).",
        ),
        Metric(
            "mysql_cdc.snapshot.rows",
            "counter",
            ("table",),
            "Rows a snapshot application copied into the table's target table in this task.",
        ),
        Metric(
            "mysql_cdc.snapshot.rows_per_second",
            "gauge",
            ("table",),
            "Rows per second of the table's snapshot in this task.",
        ),
        Metric(
            "mysql_cdc.snapshot.chunks_run",
            "gauge",
            ("table",),
            "Chunks of the table's snapshot this task ran: fewer than ``chunks_total`` when it resumed "
            "an unfinished snapshot, 0 when the snapshot had finished before.",
        ),
        Metric(
            "mysql_cdc.snapshot.chunks_total",
            "gauge",
            ("table",),
            "Chunks the table's snapshot is planned in (all of them are done when the task succeeds).",
        ),
        Metric(
            "mysql_cdc.maintenance.files_before",
            "gauge",
            ("pipeline", "table", "role"),
            "Data files of a lake table before maintenance; ``table`` is the source table (or the "
            "pipeline's own table, ``_cdc/state``...), ``role`` ``target``, ``changelog`` or ``own``.",
        ),
        Metric(
            "mysql_cdc.maintenance.files_after",
            "gauge",
            ("pipeline", "table", "role"),
            "Data files of a lake table after maintenance.",
        ),
        Metric(
            "mysql_cdc.maintenance.bytes_after",
            "gauge",
            ("pipeline", "table", "role"),
            "Bytes of a lake table's data files after maintenance.",
        ),
        Metric(
            "mysql_cdc.maintenance.vacuumed_files",
            "counter",
            ("pipeline", "table", "role"),
            "Files vacuum removed from a lake table.",
        ),
        Metric(
            "mysql_cdc.maintenance.duration",
            "timer",
            ("pipeline",),
            "How long a maintenance run took (milliseconds; skipped runs emit nothing).",
        ),
        Metric(
            "mysql_cdc.verify.rows_compared",
            "counter",
            ("pipeline", "table"),
            "Rows a verification compared between MySQL and the lake.",
        ),
        Metric(
            "mysql_cdc.verify.mismatched_rows",
            "counter",
            ("pipeline", "table"),
            "Rows a verification found missing, extra or differing in the lake, and keys it holds twice.",
        ),
        Metric(
            "mysql_cdc.verify.coverage",
            "gauge",
            ("pipeline", "table"),
            "Share (0 to 1) of the rows in the key ranges a verification checked that it compared; 0 for "
            "a table it did not compare (skipped, inconclusive). Alert below 0.9: the task is green, but "
            "the table went (partly) unchecked.",
        ),
        Metric(
            "mysql_cdc.verify.left_out_rows",
            "counter",
            ("pipeline", "table"),
            "Keys a verification left out (changed after the position, their rows there unknown); their "
            "chunks are checked again by the next verification.",
        ),
    )  # fmt: skip
}

_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def legacy_segment(value: str) -> str:
    """A tag value as one segment of a StatsD name: ``.`` -> ``__`` (Airflow's rule), any other
    character StatsD names cannot hold -> ``_``."""
    return _INVALID.sub("_", value.replace(".", "__"))


def _legacy_names_on() -> bool:
    from airflow.sdk.configuration import conf

    return conf.getboolean("metrics", "legacy_names_on", fallback=True)


def emit(name: str, value: float, **tags: str) -> None:
    """Emit ``value`` for metric ``name`` (one of :data:`METRICS`) with ``tags``; never raises."""
    metric = METRICS[name]
    if set(tags) != set(metric.tags):
        raise ValueError(f"{name} takes tags {metric.tags}, not {tuple(tags)}")
    try:
        from airflow.sdk.observability.stats import Stats

        names = [name]
        if _legacy_names_on():
            names.append(".".join([name, *(legacy_segment(tags[tag]) for tag in metric.tags)]))
        for stat in names:
            tag_values = dict(tags) if stat == name else None
            if metric.type == "counter":
                Stats.incr(stat, count=int(value), tags=tag_values)
            elif metric.type == "gauge":
                Stats.gauge(stat, value, tags=tag_values)
            else:
                Stats.timing(stat, value, tags=tag_values)
    except Exception:  # a metrics backend must never fail the run
        log.warning("Could not emit metric %s", name, exc_info=True)


def emit_apply(result: ApplyResult, tables: Sequence[str]) -> None:
    """The binlog application's figures (:class:`ApplyResult`), per pipeline and per table of
    ``tables`` (the application's): a table without changes counts 0, so its series goes on."""
    pipeline = result.pipeline_id
    stops = Counter(evolution.table for evolution in result.stopped)
    emit("mysql_cdc.apply.transactions", result.transactions, pipeline=pipeline)
    for table in sorted({*tables, *result.rows_by_table, *result.stopped_tables}):
        transactions = result.transactions_by_table.get(table, 0)
        emit("mysql_cdc.apply.table_transactions", transactions, pipeline=pipeline, table=table)
        emit("mysql_cdc.apply.rows", result.rows_by_table.get(table, 0), pipeline=pipeline, table=table)
        emit(
            "mysql_cdc.apply.table_stopped",
            int(table in result.stopped_tables),
            pipeline=pipeline,
            table=table,
        )
        emit("mysql_cdc.apply.table_stops", stops.get(table, 0), pipeline=pipeline, table=table)
    if result.lag_s is not None and result.transactions:
        emit("mysql_cdc.apply.lag_seconds", result.lag_s, pipeline=pipeline)
    emit("mysql_cdc.apply.duration", result.duration_s * 1000.0, pipeline=pipeline)
    emit("mysql_cdc.binlog.bytes_read", result.binlog_bytes_read, pipeline=pipeline)


def emit_snapshot(result: Mapping[str, Any]) -> None:
    """The snapshot application's figures (its result file), per table."""
    for table in result.get("tables", ()):
        name = str(table["table"])
        emit("mysql_cdc.snapshot.rows", table["rows"], table=name)
        duration = float(table.get("duration_s") or 0.0)
        if duration > 0:
            emit("mysql_cdc.snapshot.rows_per_second", table["rows"] / duration, table=name)
        emit("mysql_cdc.snapshot.chunks_run", table["chunks_run"], table=name)
        emit("mysql_cdc.snapshot.chunks_total", table["chunks_total"], table=name)


def emit_maintenance(report: MaintenanceReport) -> None:
    """A maintenance run's figures, per lake table; nothing for a skipped run."""
    if report.skipped:
        return
    pipeline = report.pipeline_id
    for table in report.tables:
        tags = {"pipeline": pipeline, "table": table.name, "role": table.role}
        emit("mysql_cdc.maintenance.files_before", table.files_before, **tags)
        emit("mysql_cdc.maintenance.files_after", table.files_after, **tags)
        emit("mysql_cdc.maintenance.bytes_after", table.bytes_after, **tags)
        emit("mysql_cdc.maintenance.vacuumed_files", table.vacuumed_files, **tags)
    emit("mysql_cdc.maintenance.duration", report.seconds * 1000.0, pipeline=pipeline)


def emit_verify(report: VerifyReport) -> None:
    """A verification's figures, per table; nothing for a skipped one."""
    if report.skipped:
        return
    pipeline = report.pipeline_id
    for table in report.tables:
        name = table.table
        emit("mysql_cdc.verify.rows_compared", table.rows_compared, pipeline=pipeline, table=name)
        emit("mysql_cdc.verify.mismatched_rows", table.differences, pipeline=pipeline, table=name)
        emit("mysql_cdc.verify.coverage", table.coverage, pipeline=pipeline, table=name)
        emit("mysql_cdc.verify.left_out_rows", table.excluded, pipeline=pipeline, table=name)
