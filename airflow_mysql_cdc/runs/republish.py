"""A re-run of a published interval pushes the run's XComs again, from its record in the lake.

Invariant: after a task of a published run is cleared and run again, its XComs are what they were:
the record (``return_value``) and what the run pushed besides it (``plan``, ``snapshot``,
``applied``, ``reloads``), which its record keeps (:attr:`CheckpointRecord.pushed`). Clearing a task
deletes every XCom of it, and the re-run applies nothing (it republishes the record), so without
this the UI showed nothing of the snapshot the first run took once it was cleared (issue 26).
Guarded by ``test_failed_retried_cleared_and_caught_up_runs_apply_everything_once`` and the daily
test's re-run of the first run.

Only a re-run of the record's own interval pushes them: a *covered* run (inside another run's
segment) did no work of its own, and showing another run's plan as its own would mislead.
"""

from __future__ import annotations

from typing import Any

from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord


def push_again(ti: Any, record: CheckpointRecord, log: Any) -> list[str]:
    """Push ``record.pushed`` under its keys; returns the keys pushed (none for an older record)."""
    for key, value in record.pushed.items():
        ti.xcom_push(key=key, value=value)
    if record.pushed:
        log.info(
            "pushed again from the record of run %s: %s",
            record.run_id,
            ", ".join(record.pushed),
        )
    return list(record.pushed)
