"""The long-lived binlog application: one reader by GTID, micro-batches committed to the sink.

Invariant: the position handed to the sink with a batch is ``resume point ∪ {GTID of every
transaction received so far}``, which by the reader's invariant is exactly what the batch and
everything before it consumed. Batches are cut only between transactions, so the sink's applied
set is always a prefix of the binlog order; together with the sink's per-table replay detection
that makes the application exactly once across crashes and restarts.

The run opens the pipeline (:mod:`.opening`: claim, resume point, consistent point, admission),
then reads the configured tables until the configuration's stop rule (:mod:`.reading`, through the
one batch applier of :mod:`.batches`). Guarded by ``tests/integration/test_apply_loop.py``,
``test_delta_sink.py`` and ``test_kill9_recovery.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

from airflow_mysql_cdc.engine.apply.batches import OnBatch
from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyResult
from airflow_mysql_cdc.engine.apply.opening import open_pipeline
from airflow_mysql_cdc.engine.apply.reading import Read, read_into_sink
from airflow_mysql_cdc.engine.lake.sink import Sink
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint


def departed_tables(tables: Sequence[str], members: Mapping[str, str] | None) -> tuple[str, ...]:
    """Configured tables the pipeline does not stream (they left it, see :mod:`.admission`)."""
    if members is None:
        return ()
    return tuple(name for name in tables if str(TableRef.parse(name)) not in members)


def run_apply(
    config: ApplyConfig,
    endpoint: MySqlEndpoint,
    *,
    sink: Sink | None = None,
    on_batch: OnBatch | None = None,
    stop_requested: threading.Event | None = None,
) -> ApplyResult:
    """Apply the binlog to the sink as configured; returns what was applied and where it ended.

    Tables that are not yet members of the pipeline are admitted first (caught up from their
    snapshot when needed, see :mod:`.admission`). ``stop_requested`` ends the run early
    (SIGTERM, a benchmark): the pending batch is committed first, so the result's end set is
    exactly what the lake holds.
    """
    started = time.monotonic()
    opened = open_pipeline(config, endpoint, sink=sink, stop_requested=stop_requested)
    if opened.done is not None:
        return opened.done
    read = Read(
        tables=config.tables,
        start=opened.resume_from,
        stop_rule=config.stop_rule(opened.consistent_point),
        snapshots=opened.snapshots,
        departed=departed_tables(config.tables, opened.sink.members),
    )
    return read_into_sink(
        read, config, endpoint, opened.sink, opened.starting_result(config),
        started=started, on_batch=on_batch, stop_requested=stop_requested,
    )  # fmt: skip
