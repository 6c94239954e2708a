"""What one run of the binlog application does and what it did: typed values, JSON at the edge only.

Invariant: everything here may be printed, logged and passed on a command line. GTID sets are
:class:`GtidSet` values from the moment the configuration is read (:meth:`ApplyConfig.from_dict`)
until the result is written (:meth:`ApplyResult.to_dict`); only those two methods see their text, so
a malformed set is refused when the configuration is read, never halfway through a run. Credentials
travel separately, in the environment: the MySQL endpoint (:meth:`MySqlEndpoint.from_environment`)
and the lake's secret storage options (:func:`..lake.storage.secret_storage_options_from_environment`),
which the entry point puts in ``secret_storage_options``, a field never written to JSON or shown
in ``repr``. A secret key in ``storage_options`` is refused (:func:`..lake.storage.check_storage_options`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from airflow_mysql_cdc.engine.binlog.statements import SCHEMA_CHANGE_MODES, SchemaChangeMode
from airflow_mysql_cdc.engine.binlog.stop_rules import (
    Live,
    StopRule,
    UntilCaughtUp,
    UntilCommitTimestamp,
    UntilGtidSet,
)
from airflow_mysql_cdc.engine.errors import ConfigurationError
from airflow_mysql_cdc.engine.lake.storage import check_storage_options, merged_storage_options
from airflow_mysql_cdc.engine.values.gtid import GtidSet

Mode = Literal["segment", "until_gtid_set", "until_caught_up", "live"]
MODES: tuple[str, ...] = ("segment", "until_gtid_set", "until_caught_up", "live")


class ApplyConfigError(ConfigurationError, ValueError):
    """The application's configuration is incomplete or inconsistent."""


@dataclass(frozen=True)
class ApplyConfig:
    pipeline_id: str
    lake_root: str
    tables: tuple[str, ...]
    start_gtids: GtidSet = field(default_factory=GtidSet)
    mode: Mode = "until_caught_up"
    segment_end_us: int | None = None
    """segment mode: apply every transaction committed before this instant (microseconds, UTC)."""
    target_gtids: GtidSet | None = None
    """until_gtid_set mode: stop once the position contains this set."""
    """until_gtid_set mode: also stop before any transaction outside the target (never pass it)."""
    batch_max_rows: int = 50_000
    batch_max_seconds: float = 1.0
    wave_max_rows: int = 1_000_000
    """A catch-up (:meth:`catches_up`) merges each table once per this many row changes (a wave)."""
    wave_memory_mb: float = 256.0
    """Above this, a wave's changelog rows are spilled to local files (its last rows per key stay)."""
    soft_deletes: bool = False
    server_id: int | None = None
    heartbeat_s: float = 1.0
    max_buffered_bytes: int = 256 * 1024 * 1024
    progress_interval_s: float = 10.0
    lease_s: float = 60.0
    """A second instance refuses to start while the running one's heartbeat is younger than this."""
    storage_options: dict[str, str] = field(default_factory=dict)
    """Public delta-rs storage options of the lake (endpoint, region); never credentials."""
    schema_changes: SchemaChangeMode = "evolve"
    """DDL on a tracked table: ``evolve`` the lake table or re-snapshot it (docs/operations.md), or
    ``stop`` the run before it (:class:`~..binlog.errors.SchemaChangeError`)."""
    rebase: bool = False
    """Move the pipeline to ``start_gtids`` even if the lake is behind it: only after every table was
    re-snapshotted (purged binlogs). Each table must then join again from its new snapshot."""
    secret_storage_options: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """Credentials of the lake, from the environment at the application's start: never serialised."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ApplyConfigError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.mode == "segment" and self.segment_end_us is None:
            raise ApplyConfigError("segment mode needs segment_end_us (the data interval end)")
        if self.mode == "until_gtid_set" and not self.target_gtids:
            raise ApplyConfigError("until_gtid_set mode needs target_gtids")
        if not self.tables:
            raise ApplyConfigError("tables is empty: name at least one schema.table")
        if self.schema_changes not in SCHEMA_CHANGE_MODES:
            raise ApplyConfigError(
                f"schema_changes must be one of {', '.join(SCHEMA_CHANGE_MODES)}, not {self.schema_changes!r}"
            )
        if self.batch_max_rows < 1 or self.batch_max_seconds <= 0:
            raise ApplyConfigError("batch_max_rows and batch_max_seconds must be positive")
        if self.wave_max_rows < 1 or self.wave_memory_mb <= 0:
            raise ApplyConfigError("wave_max_rows and wave_memory_mb must be positive")
        check_storage_options(self.storage_options, where="the binlog application's configuration")

    def lake_storage_options(self) -> dict[str, str] | None:
        """What delta-rs gets to reach the lake: public and secret options (None: its defaults)."""
        return merged_storage_options(self.storage_options, self.secret_storage_options)

    @property
    def start(self) -> GtidSet:
        return self.start_gtids

    def catches_up(self, now_us: int | None = None) -> bool:
        """Whether the read's end has passed when it starts, so no one waits on a batch's latency:
        ``until_caught_up``, ``until_gtid_set``, and a segment that ended (plus a second) already."""
        if self.mode in ("until_caught_up", "until_gtid_set"):
            return True
        if self.mode != "segment" or self.segment_end_us is None:
            return False
        now_us = now_us if now_us is not None else time.time_ns() // 1000
        return self.segment_end_us + 1_000_000 < now_us

    def stop_rule(self, consistent_point: GtidSet | None = None) -> StopRule:
        """The rule ending this run's read; it never ends before ``consistent_point`` is contained.

        ``consistent_point`` is where every member table is exact (the union of their snapshot
        chunks' high watermarks, see :func:`.admission.consistent_point`): a segment or a target
        that ends before it is extended to it. (A joining table's catch-up, which must not leave its
        target, has its own rule: :mod:`.opening`.)
        """
        consistent = consistent_point or GtidSet()
        if self.mode == "segment":
            assert self.segment_end_us is not None
            return UntilCommitTimestamp(self.segment_end_us, consistent_point=consistent)
        if self.mode == "until_gtid_set":
            target = self.target_gtids or GtidSet()
            return UntilGtidSet(target | consistent)
        if self.mode == "until_caught_up":
            return UntilCaughtUp(at_least=consistent)
        return Live()

    def to_json(self) -> str:
        public = {item.name: getattr(self, item.name) for item in fields(self)}
        del public["secret_storage_options"]
        return json.dumps(public, indent=2, default=str)  # GtidSet: its text form

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ApplyConfig:
        if any(key in data for key in ("password", "user", "host")):
            raise ApplyConfigError(
                "credentials do not belong in the configuration: pass the endpoint in the environment"
            )
        known = set(cls.__dataclass_fields__) - {"secret_storage_options"}  # from the environment only
        unknown = sorted(set(data) - known)
        if unknown:
            raise ApplyConfigError(f"unknown configuration keys: {', '.join(unknown)}")
        values = dict(data)
        values["tables"] = tuple(values.get("tables") or ())
        values["start_gtids"] = _gtid_set(values.get("start_gtids"), "start_gtids")
        if values.get("target_gtids") is not None:
            values["target_gtids"] = _gtid_set(values["target_gtids"], "target_gtids")
        return cls(**values)

    @classmethod
    def from_file(cls, path: str | Path) -> ApplyConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))


def _gtid_set(text: Any, key: str) -> GtidSet:
    """A GTID set of the JSON configuration (``""`` and null: the empty set)."""
    if text is not None and not isinstance(text, str):
        raise ApplyConfigError(f"{key} must be a GTID set in MySQL's text form, not {text!r}")
    return GtidSet.parse(text)


@dataclass
class ApplyResult:
    """What a run applied and where it ended; :meth:`to_dict` is the result file's JSON form."""

    pipeline_id: str
    requested_start: GtidSet
    resumed_from: GtidSet
    end_gtids: GtidSet
    transactions: int = 0
    rows_by_table: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    duration_s: float = 0.0
    last_commit_timestamp_us: int | None = None
    lag_s: float | None = None
    """Seconds between the last applied transaction's commit and the end of the run."""
    sink_epoch: int = 0
    caught_up: dict[str, GtidSet] = field(default_factory=dict)
    """Tables that joined the pipeline after a catch-up, with the GTID set it ended at."""
    consistent_point: GtidSet = field(default_factory=GtidSet)
    """The smallest end at which every table is exact (their snapshots' high watermarks): the run
    did not end before it, even when its interval ended earlier (``admission.consistent_point``)."""
    already_applied: bool = False
    """The lake held the whole segment before the run (a retried or cleared run): nothing applied."""
    schema_changes: list[dict[str, Any]] = field(default_factory=list)
    """Every table a DDL touched: ``gtid``, ``table``, ``action`` (evolve, truncate, leave,
    resnapshot, unchanged), ``reason``, ``added`` and ``dropped`` columns, in binlog order."""

    @property
    def to_resnapshot(self) -> list[str]:
        """Tables that left the pipeline at a schema change and wait for a new snapshot."""
        left = {
            change["table"]: change["action"]
            for change in self.schema_changes
            if change["action"] in ("resnapshot", "leave")
        }
        return sorted(table for table, action in left.items() if action == "resnapshot")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: every GTID set as MySQL's text."""
        data = {item.name: getattr(self, item.name) for item in fields(self)}
        data["rows_by_table"] = dict(self.rows_by_table)
        data["caught_up"] = {table: str(end) for table, end in self.caught_up.items()}
        data["schema_changes"] = [dict(change) for change in self.schema_changes]
        for key in ("requested_start", "resumed_from", "end_gtids", "consistent_point"):
            data[key] = str(data[key])
        return data

    @classmethod
    def starting(
        cls,
        pipeline_id: str,
        requested_start: GtidSet,
        resume_from: GtidSet,
        *,
        sink_epoch: int = 0,
        consistent: GtidSet | None = None,
    ) -> ApplyResult:
        """The result of a run that has applied nothing yet, resuming from ``resume_from``."""
        return cls(
            pipeline_id=pipeline_id,
            requested_start=requested_start,
            resumed_from=resume_from,
            end_gtids=resume_from,
            sink_epoch=sink_epoch,
            consistent_point=consistent or GtidSet(),
        )
