"""The example DAG's configuration: a JSON file, so another server or table list needs no code change.

The file is named by ``AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG`` (default: ``mysql_cdc_pipeline.json``
next to the DAG file). Every key is optional; the embedded defaults run the demo. Credentials are
never in this file: MySQL's are the Airflow connection ``mysql_cdc_conn_id``, the lake's the
connection ``lake_conn_id`` (or the Spark driver's environment or instance role); a credential
among ``storage_options`` is refused, since this file is read, printed and passed on.
"""

from __future__ import annotations

import datetime
import json
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args

from airflow_mysql_cdc.engine.apply.config import (
    ApplyConfigError,
    SchemaChangeMode,
    StatementChangeMode,
    check_schema_change_mode,
    check_statement_change_mode,
)
from airflow_mysql_cdc.engine.lake.layout import lake_uri
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy, MaintenancePolicyError
from airflow_mysql_cdc.engine.lake.storage import (
    StorageOptionsError,
    check_storage_options,
    refuse_credentials,
)
from airflow_mysql_cdc.engine.runtime.progress import PROGRESS_INTERVAL_S, check_progress_interval
from airflow_mysql_cdc.engine.verify.settings import VerifySettings, VerifySettingsError, verify_mode
from airflow_mysql_cdc.hooks.gtid_conditions import OnPurged
from airflow_mysql_cdc.pipeline.spark_settings import SparkSettings, SparkSettingsError

CONFIG_VARIABLE = "AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG"
SensorMode = Literal["poke", "reschedule", "deferrable"]
SENSOR_MODES: tuple[SensorMode, ...] = get_args(SensorMode)
_EVERY = re.compile(r"^every\s+(\d+)\s*(s|m|h|d)$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_PRESETS = {
    "@hourly": datetime.timedelta(hours=1),
    "@daily": datetime.timedelta(days=1),
    "@weekly": datetime.timedelta(weeks=1),
    "@monthly": datetime.timedelta(days=28),
    "@quarterly": datetime.timedelta(days=90),
    "@yearly": datetime.timedelta(days=365),
    "@annually": datetime.timedelta(days=365),
}


class PipelineConfigError(ValueError):
    """The pipeline configuration file is unreadable or has wrong keys or values."""


@dataclass(frozen=True)
class PipelineConfig:
    dag_id: str = "mysql_cdc_daily"
    pipeline_id: str = "mysql_cdc"
    """Names the pipeline's state in the lake; one lake location holds one pipeline."""
    mysql_cdc_conn_id: str = "mysql_cdc_default"
    spark_conn_id: str = "spark_default"
    tables: tuple[str, ...] = ("demo_shop.customers", "demo_shop.orders")
    lake_root: str = str(Path.home() / "mysql-cdc-lake")
    """A local path or a URI: ``s3://bucket/prefix``, ``gs://...``, ``abfss://...``, ``file:///...``."""
    storage_options: dict[str, str] = field(default_factory=dict)
    """Public delta-rs storage options of the lake, e.g. ``{"AWS_ENDPOINT_URL": ..., "AWS_REGION": ...}``."""
    lake_conn_id: str | None = None
    """An ``aws`` Airflow connection with the lake's credentials; unset: the Spark driver's own."""
    schedule: str = "@daily"
    """A cron expression or preset, or ``every <N>s|m|h|d`` for a fixed interval."""
    start_date: str = "2026-11-01T00:00:00+00:00"
    catchup: bool = True
    chunk_size: int = 50_000
    on_purged: OnPurged = "fail"
    """What a run does when binlogs it needs were purged: ``fail``, or ``resnapshot`` every table."""
    retries: int = 2
    retry_delay_s: int = 60
    resumability_timeout_s: int = 3600
    """How long a run waits for a lagging replica to catch up with the checkpoint."""
    retention_headroom_runs: int = 3
    """Warn when the checkpoint's binlog would be purged within this many schedule intervals (that many
    failed or missed runs in a row); docs/operations.md, "Binlog retention headroom"."""
    binlog_retention_hours: float | None = None
    """How long the server keeps binlogs, when it cannot say (Cloud SQL) or says wrong; wins over it."""
    stale_after_hours: float | None = None
    """Warn when the server has moved on and the checkpoint covers data only up to longer ago than
    this; unset: two schedule intervals; 0: never."""
    sensor_poke_interval_s: int = 30
    sensor_mode: SensorMode | None = None
    """``reschedule`` frees the worker slot between pokes; ``poke`` holds it (quicker for short waits);
    ``deferrable`` hands the wait to the triggerer. Unset: ``deferrable`` when Airflow's ``[operators]
    default_deferrable`` is true, else ``reschedule`` (:meth:`sensor_arguments`)."""
    batch_max_seconds: float = 1.0
    progress_interval_s: float = PROGRESS_INTERVAL_S
    """Seconds between two progress lines of the snapshot and the binlog application in the log."""
    catchup_parallelism: int = 1
    """K > 1: a run whose interval already ended (catch-up, backfill) reads it with K range readers."""
    catch_up_backlog: bool = True
    """A run that starts more than one schedule interval after its interval end (runs queued behind a
    slow one, a resumed DAG) applies up to the time it starts, so the runs queued behind it find
    their intervals covered and finish without Spark (docs/pipeline-dag.md)."""
    soft_deletes: bool = False
    schema_changes: SchemaChangeMode = "evolve"
    """DDL on a tracked table: ``evolve`` its lake table in place or re-snapshot it within the run, or
    ``stop`` the run before it (docs/operations.md, "Schema changes")."""
    statement_changes: StatementChangeMode = "stop"
    """A data change of a tracked table logged as a statement (a session with binlog_format=STATEMENT
    or MIXED: its rows are not in the binlog): ``stop`` the run before it, naming the table, GTID and
    statement, or ``resnapshot`` that table within the run (docs/operations.md, "A statement-logged
    change on a tracked table")."""
    tags: tuple[str, ...] = field(default_factory=lambda: ("mysql-cdc",))
    spark: dict[str, Any] = field(default_factory=dict)
    """How the replicate task runs Spark: properties, executor Python, memory, cores, extra files,
    Kubernetes image and namespace, a timeout (docs/deployment.md; :mod:`.spark_settings`)."""
    maintenance: dict[str, Any] = field(default_factory=dict)
    """The lake's upkeep after each run (on by default): cadence, thresholds, file size, vacuum
    retention (docs/operations.md, "Lake maintenance"); ``{"enabled": false}`` turns it off."""
    verify: str = "sample"
    """``off``, ``sample`` or ``full``: a ``verify_lake`` task after each run compares the lake with
    the source at the run's position (docs/operations.md, "Verifying the lake"). ``sample`` by
    default: a user who never turns it on still learns of a wrong table, at a cost measured in
    docs/pipeline-dag.md ("What a run costs")."""
    verify_sample_chunks: int = 4
    """Chunks (of ``chunk_size`` rows) per table a ``sample`` verification checks; the next run goes on."""
    verify_max_examples: int = 10
    verify_mask_values: bool = False
    """Differences name keys by a hash and columns by name, never their values."""
    verify_repair: bool = False
    """Set exactly the differing keys to their values at the run's position, then verify them again."""
    docs_url: str | None = None
    """Where your copy of this package's ``docs/`` folder is served (e.g. your Git host's page of it);
    the DAG's docs page links there. Unset: the docs are named by path."""

    def __post_init__(self) -> None:
        if self.on_purged not in ("fail", "resnapshot"):
            raise PipelineConfigError(f"on_purged must be 'fail' or 'resnapshot', not {self.on_purged!r}")
        try:
            check_schema_change_mode(self.schema_changes, where="the pipeline configuration")
            check_statement_change_mode(self.statement_changes, where="the pipeline configuration")
        except ApplyConfigError as error:
            raise PipelineConfigError(str(error)) from error
        if not self.tables:
            raise PipelineConfigError("tables is empty: name at least one schema.table")
        if self.sensor_mode is not None and self.sensor_mode not in SENSOR_MODES:
            raise PipelineConfigError(
                f"sensor_mode must be one of {', '.join(SENSOR_MODES)}, not {self.sensor_mode!r} (leave it "
                "out to follow Airflow's [operators] default_deferrable)"
            )
        if not isinstance(self.retention_headroom_runs, int) or self.retention_headroom_runs < 1:
            raise PipelineConfigError(
                "retention_headroom_runs must be a whole number of at least 1, not "
                f"{self.retention_headroom_runs!r}"
            )
        if self.binlog_retention_hours is not None and not self.binlog_retention_hours > 0:
            raise PipelineConfigError(
                f"binlog_retention_hours must be more than 0 hours, not {self.binlog_retention_hours!r} "
                "(leave it out to read the retention from the server)"
            )
        check_progress_interval(self.progress_interval_s, PipelineConfigError)
        if self.stale_after_hours is not None and not self.stale_after_hours >= 0:
            raise PipelineConfigError(
                f"stale_after_hours must be 0 (never warn) or more, not {self.stale_after_hours!r}"
            )
        try:
            check_storage_options(self.storage_options, where="the pipeline configuration")
            lake_uri(self.lake_root)
        except (StorageOptionsError, ValueError) as error:
            raise PipelineConfigError(str(error)) from error
        datetime.datetime.fromisoformat(self.start_date)
        self.schedule_value()
        try:
            self.spark_settings()
        except SparkSettingsError as error:
            raise PipelineConfigError(str(error)) from error
        try:
            MaintenancePolicy.from_dict(self.maintenance)
        except MaintenancePolicyError as error:
            raise PipelineConfigError(str(error)) from error
        try:
            self.verify_settings()
        except VerifySettingsError as error:
            raise PipelineConfigError(str(error)) from error

    def verify_settings(self) -> VerifySettings:
        return VerifySettings(
            mode=verify_mode(self.verify),
            sample_chunks=self.verify_sample_chunks,
            chunk_size=self.chunk_size,
            max_examples=self.verify_max_examples,
            mask_values=self.verify_mask_values,
            repair=self.verify_repair,
        )

    def sensor_arguments(self, default_deferrable: bool) -> dict[str, Any]:
        """The resumability sensor's ``mode`` and ``deferrable``: the configured ``sensor_mode``, or,
        unset, Airflow's ``[operators] default_deferrable`` (``default_deferrable``), else reschedule.

        A configured mode always wins, so ``poke`` stays poke where the Airflow default is deferrable
        (the sensor defers whatever its ``mode`` when ``deferrable`` is true)."""
        mode = self.sensor_mode or ("deferrable" if default_deferrable else "reschedule")
        if mode == "deferrable":
            return {"deferrable": True}
        return {"mode": mode, "deferrable": False}

    def spark_settings(self) -> SparkSettings:
        return SparkSettings.from_dict(self.spark)

    def schedule_value(self) -> str | datetime.timedelta:
        match = _EVERY.match(self.schedule.strip())
        if match:
            return datetime.timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
        return self.schedule

    def interval(self) -> datetime.timedelta | None:
        """The time between two scheduled runs (the shortest, for a cron schedule); None: no schedule."""
        value = self.schedule_value()
        if isinstance(value, datetime.timedelta):
            return value
        preset = _PRESETS.get(value.strip())
        if preset is not None:
            return preset
        if value.strip() in ("@once", "@continuous", "None", ""):
            return None
        from croniter import croniter  # Airflow's own dependency; imported only for cron schedules

        fires = croniter(value, self.start)
        times = [fires.get_next(datetime.datetime) for _ in range(8)]
        return min(later - earlier for earlier, later in zip(times, times[1:], strict=False))

    def stale_after(self) -> datetime.timedelta | None:
        """When a position that has not advanced is stale: ``stale_after_hours``, else two intervals."""
        if self.stale_after_hours is not None:
            return datetime.timedelta(hours=self.stale_after_hours) if self.stale_after_hours else None
        interval = self.interval()
        return 2 * interval if interval else None

    @property
    def start(self) -> datetime.datetime:
        start = datetime.datetime.fromisoformat(self.start_date)
        return start if start.tzinfo else start.replace(tzinfo=datetime.UTC)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PipelineConfig:
        refuse_credentials(
            data,
            where="the pipeline configuration",
            instead="credentials belong in the Airflow connections it names (mysql_cdc_conn_id for MySQL, "
            "lake_conn_id for the lake)",
            error=PipelineConfigError,
        )
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise PipelineConfigError(
                f"unknown pipeline configuration keys: {', '.join(unknown)} "
                f"(known: {', '.join(sorted(known))})"
            )
        values = dict(data)
        for key in ("tables", "tags"):
            if key in values:
                raw = values[key]
                values[key] = tuple(t.strip() for t in raw.split(",")) if isinstance(raw, str) else tuple(raw)
        try:
            return cls(**values)
        except (TypeError, ValueError) as error:
            raise PipelineConfigError(f"bad pipeline configuration: {error}") from error


def load_pipeline_config(default_path: Path | str | None = None) -> PipelineConfig:
    """The configuration from ``$AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG``, else ``default_path``, else defaults."""
    named = os.environ.get(CONFIG_VARIABLE)
    path = Path(named) if named else (Path(default_path) if default_path else None)
    if path is None or (not named and not path.exists()):
        return PipelineConfig()
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise PipelineConfigError(f"cannot read the pipeline configuration {path}: {error}") from error
    if not isinstance(data, dict):
        raise PipelineConfigError(f"the pipeline configuration {path} must hold a JSON object")
    try:
        return PipelineConfig.from_dict(data)
    except PipelineConfigError as error:
        # The DAG's import error is all a user sees: it names the file to edit (its path is not secret).
        raise PipelineConfigError(f"the pipeline configuration {path}: {error}") from error
