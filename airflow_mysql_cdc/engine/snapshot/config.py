"""The snapshot application's configuration: which lake and tables, chunk size, restart, cadence.

Invariant: the file holds nothing secret (:mod:`~airflow_mysql_cdc.engine.lake.application_config`):
the lake's credentials join it only in the running application, from its environment. Its checks
(at least one table, public storage options, a progress cadence that moves on) run when it is built
(the operator, at task time, before spark-submit) and again when the application reads the file.
No Delta, Arrow or Spark import here, so the operator builds it without loading them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from airflow_mysql_cdc.engine.errors import ConfigurationError
from airflow_mysql_cdc.engine.lake.application_config import LakeApplicationConfig
from airflow_mysql_cdc.engine.lake.storage import check_storage_options
from airflow_mysql_cdc.engine.runtime.progress import PROGRESS_INTERVAL_S, check_progress_interval


class SnapshotConfigError(ConfigurationError, ValueError):
    """The snapshot application's configuration is incomplete or wrong."""


@dataclass(frozen=True)
class SnapshotConfig(LakeApplicationConfig):
    application: ClassVar[str] = "the snapshot application"
    config_error: ClassVar[type[Exception]] = SnapshotConfigError

    lake_root: str
    tables: tuple[str, ...]
    chunk_size: int = 50_000
    restart: bool = False
    """Take a new snapshot even of a table whose snapshot finished (a re-snapshot replaces its rows)."""
    base_server_id: int | None = None
    """Windows that reconcile use replication server_ids ``base_server_id + chunk index``."""
    storage_options: dict[str, str] = field(default_factory=dict)
    """Public delta-rs storage options of the lake (endpoint, region); never credentials."""
    secret_storage_options: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """Credentials of the lake, from the environment at the application's start: never serialised."""
    executor_writes: bool = True
    """False: windows hand their rows to the driver, which writes them (benchmarks compare the two;
    lakes on stores executors do not write to, such as gs://, always do)."""
    progress_interval_s: float = PROGRESS_INTERVAL_S
    """How often each table's snapshot logs a progress line (chunks done/total, rows/s, ETA)."""

    def __post_init__(self) -> None:
        if not self.tables:
            raise SnapshotConfigError("tables is empty: name at least one schema.table")
        check_storage_options(self.storage_options, where=self.where())
        check_progress_interval(self.progress_interval_s, SnapshotConfigError)
