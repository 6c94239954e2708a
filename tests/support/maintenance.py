"""What another writer's routine maintenance does to a lake: compaction, checkpoints, log clean-up, vacuum.

A Spark or Databricks job that OPTIMIZEs the lake's tables, or a delta-rs script, does this with
Delta's defaults; here the log retention is set to one second so that the clean-up deletes every
commit file before the checkpoint at once, instead of after 30 days. Nothing a later run needs may
be lost by it (docs/architecture.md, "Where the pipeline's state lives").

The checkpoint is taken at the compaction, before the retention property is set, so the clean-up
deletes the commits up to the compaction: with a real 30-day retention those are commits the
pipeline's daily runs have long seen and vouched for (:mod:`airflow_mysql_cdc.engine.lake.outside_changes`).
A clean-up of commits no run has seen is the other case, a stop: tests/integration/test_outside_changes.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from deltalake import DeltaTable


def delta_tables(lake: Path) -> Iterator[Path]:
    """Every Delta table under a local lake root (the pipeline's own tables included)."""
    for log in sorted(lake.rglob("_delta_log")):
        yield log.parent


def maintain_like_another_writer(lake: Path) -> list[str]:
    """Compact, checkpoint, clean up expired logs and vacuum every table; returns the tables touched."""
    touched = []
    for path in delta_tables(lake):
        table = DeltaTable(str(path))
        table.optimize.compact()
        table.create_checkpoint()
        table.alter.set_table_properties(
            {"delta.logRetentionDuration": "interval 1 seconds"}, raise_if_not_exists=False
        )
        touched.append(str(path))
    time.sleep(1.5)  # every commit file is now older than the retention
    for path in touched:
        table = DeltaTable(path)
        table.cleanup_metadata()
        table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    return touched


def history_starts_after_version_zero(path: str) -> bool:
    """The table's commit history no longer reaches its first commit (the clean-up deleted it)."""
    return 0 not in [commit["version"] for commit in DeltaTable(path).history()]
