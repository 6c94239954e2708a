"""The package's metrics, one catalogue, emitted through Airflow's stats interface.

Invariant: every metric the package emits is in ``METRICS`` (name, type, tags, meaning), which is
docs/metrics.md's table, and goes out through :func:`emit`, which refuses tags the catalogue does
not give it. Emitting never fails a task: a broken metrics backend costs the metrics, not the run.
Only the Airflow side emits (the operators after reading an application's result,
:mod:`airflow_mysql_cdc.operators.metrics`; the resumability sensor, :mod:`..sensors.gtid_sensors`);
the engine, which runs inside Spark on machines without Airflow, emits nothing. It lives with the
hooks, below the sensors and the operators, because both report through it.

Names follow Airflow's own metrics (Airflow 3.2+): the name holds no variables and the dimensions
are tags (``pipeline``, ``table``), which Datadog, OpenTelemetry and StatsD with
``statsd_influxdb_enabled`` carry. A plain StatsD server has no tags, so, like Airflow's "legacy"
names, each metric is also emitted with its tags in the name when ``[metrics] legacy_names_on`` is
true (Airflow's default): ``mysql_cdc.apply.rows.<pipeline>.<table>``, a ``.`` inside a value
written ``__`` (``shop.orders`` -> ``shop__orders``) so the name keeps its segments, as Airflow does
for a task id inside a task group. The sensor's four metrics once held the pipeline id in the name
(``mysql_cdc.<pipeline>.binlog_headroom_seconds``...); they were renamed to this rule (issue 34).

Guarded by tests/unit/airflow/hooks/test_metrics.py (the catalogue against docs/metrics.md, the
legacy names, a broken backend), tests/unit/airflow/operators/test_metrics.py and
tests/unit/airflow/sensors/test_gtid_sensors.py (what each emits), and
tests/integration/test_binlog_apply_operator.py (a StatsD listener on loopback receives them).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Literal

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
            "mysql_cdc.binlog.headroom_seconds",
            "gauge",
            ("pipeline",),
            "Set by the resumability sensor when the checkpoint is resumable: seconds until the server "
            "may purge the binlog file the checkpoint needs (not set when the retention is unknown).",
        ),
        Metric(
            "mysql_cdc.binlog.headroom_low",
            "counter",
            ("pipeline",),
            "1 when the headroom is below ``schedule_interval × retention_headroom_runs`` (the "
            "sensor warns; below one interval it fails), else 0.",
        ),
        Metric(
            "mysql_cdc.checkpoint.behind_seconds",
            "gauge",
            ("pipeline",),
            "Set by the resumability sensor while the server has transactions the checkpoint lacks: "
            "seconds since the data the checkpoint covers (the chain head's ``segment_end``).",
        ),
        Metric(
            "mysql_cdc.checkpoint.stale",
            "counter",
            ("pipeline",),
            "1 when the position is stale (behind by more than ``stale_after_hours`` and the server "
            "has moved on; the sensor warns), else 0.",
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
