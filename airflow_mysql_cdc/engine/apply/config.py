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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from airflow_mysql_cdc.engine.binlog.stop_rules import (
    Live,
    StopRule,
    UntilCaughtUp,
    UntilCommitTimestamp,
    UntilGtidSet,
)
from airflow_mysql_cdc.engine.errors import ConfigurationError
from airflow_mysql_cdc.engine.lake.evolution import TableEvolution
from airflow_mysql_cdc.engine.lake.storage import (
    check_storage_options,
    merged_storage_options,
    refuse_credentials,
)
from airflow_mysql_cdc.engine.runtime.progress import PROGRESS_INTERVAL_S, check_progress_interval
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject

if TYPE_CHECKING:
    from airflow_mysql_cdc.engine.lake.state.store import LakeState

Mode = Literal["segment", "until_gtid_set", "until_caught_up", "live"]
MODES: tuple[str, ...] = get_args(Mode)
SchemaChangeMode = Literal["evolve", "stop"]
"""What DDL on a tracked table does: evolve the lake table (or re-snapshot it), or stop the run."""
SCHEMA_CHANGE_MODES: tuple[str, ...] = get_args(SchemaChangeMode)
StatementChangeMode = Literal["stop", "resnapshot"]
"""What a statement-logged data change of a tracked table (its rows are not in the binlog) does:
stop the run before it, or re-snapshot the table within the run."""
STATEMENT_CHANGE_MODES: tuple[str, ...] = get_args(StatementChangeMode)


class ApplyConfigError(ConfigurationError, ValueError):
    """The application's configuration is incomplete or inconsistent."""


def check_schema_change_mode(mode: object, *, where: str) -> SchemaChangeMode:
    """``mode`` if it is a :data:`SchemaChangeMode`; else :class:`ApplyConfigError` naming ``where``.

    The one check of the mode: the operators call it in their constructors (a DAG with a typo fails
    at parse), :class:`ApplyConfig` when the engine reads its configuration.
    """
    if mode not in SCHEMA_CHANGE_MODES:
        raise ApplyConfigError(
            f"{where}: schema_changes must be one of {', '.join(SCHEMA_CHANGE_MODES)}, not {mode!r} "
            "(evolve: apply DDL to the lake table or re-snapshot it; stop: fail the run before it)"
        )
    return cast(SchemaChangeMode, mode)  # one of SCHEMA_CHANGE_MODES, tested above


def check_statement_change_mode(mode: object, *, where: str) -> StatementChangeMode:
    """``mode`` if it is a :data:`StatementChangeMode`; else :class:`ApplyConfigError` naming ``where``
    (the one check, asked where :func:`check_schema_change_mode` is)."""
    if mode not in STATEMENT_CHANGE_MODES:
        raise ApplyConfigError(
            f"{where}: statement_changes must be one of {', '.join(STATEMENT_CHANGE_MODES)}, not {mode!r} "
            "(stop: fail the run before a statement-logged change of a tracked table; resnapshot: "
            "snapshot that table again within the run)"
        )
    return cast(StatementChangeMode, mode)  # one of STATEMENT_CHANGE_MODES, tested above


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
    progress_interval_s: float = PROGRESS_INTERVAL_S
    """How often the application logs a progress line (transactions, rows/s, lag, position)."""
    lease_s: float = 60.0
    """A second instance refuses to start while the running one's heartbeat is younger than this."""
    storage_options: dict[str, str] = field(default_factory=dict)
    """Public delta-rs storage options of the lake (endpoint, region); never credentials."""
    schema_changes: SchemaChangeMode = "evolve"
    """DDL on a tracked table: ``evolve`` the lake table or re-snapshot it (docs/operations.md), or
    ``stop`` the run before it (:class:`~..binlog.errors.SchemaChangeError`)."""
    statement_changes: StatementChangeMode = "stop"
    """A statement-logged data change of a tracked table (binlog_format=STATEMENT/MIXED in some
    session): ``stop`` the run before it (:class:`~..binlog.errors.StatementBasedChangeError`), or
    ``resnapshot`` the table within the run (:mod:`.statement_changes`)."""
    rebase: bool = False
    """Move the pipeline to ``start_gtids`` even if the lake is behind it: only after every table was
    re-snapshotted (purged binlogs). Each table must then join again from its new snapshot."""
    keep_members: bool = False
    """With ``rebase``: the tables stay members at the new start (an operator's confirmed
    ``rebase_checkpoint``: they vouch that every table equals its source there), and their snapshots'
    watermarks no longer bound where a run may end (:mod:`..lake.rebases`)."""
    pause: tuple[str, ...] = ()
    """Member tables this run takes out of the stream, frozen at its start (:mod:`..lake.pauses`)."""
    resume: tuple[str, ...] = ()
    """Paused tables this run catches up and streams again."""
    run_id: str = ""
    """The Airflow run applying (recorded in pause marks)."""
    unsettled: dict[str, GtidSet] = field(default_factory=dict)
    """Tables a key-range re-load just verified and repaired while writes went on, each with
    ``gtid_executed`` after it: the keys it left to the stream (changed after the lake's position)
    may be wrong at the position, so batches reaching into that set check the table's MERGE by
    bounds only (:mod:`..lake.batch_check`, "unsettled"); exactly again once the stream is past it."""
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
        if self.keep_members and not self.rebase:
            raise ApplyConfigError("keep_members only goes with rebase (a confirmed rebase_checkpoint)")
        if both := sorted(set(self.pause) & set(self.resume)):
            raise ApplyConfigError(f"{', '.join(both)} cannot be paused and resumed in the same run")
        check_schema_change_mode(self.schema_changes, where="the binlog application's configuration")
        check_statement_change_mode(self.statement_changes, where="the binlog application's configuration")
        if self.batch_max_rows < 1 or self.batch_max_seconds <= 0:
            raise ApplyConfigError("batch_max_rows and batch_max_seconds must be positive")
        if self.wave_max_rows < 1 or self.wave_memory_mb <= 0:
            raise ApplyConfigError("wave_max_rows and wave_memory_mb must be positive")
        check_progress_interval(self.progress_interval_s, ApplyConfigError)
        check_storage_options(self.storage_options, where="the binlog application's configuration")

    @property
    def evolves_schema(self) -> bool:
        """DDL on a tracked table is applied to the lake (``evolve``), not a stop (``stop``)."""
        return self.schema_changes == "evolve"

    def lake_storage_options(self) -> dict[str, str] | None:
        """What delta-rs gets to reach the lake: public and secret options (None: its defaults)."""
        return merged_storage_options(self.storage_options, self.secret_storage_options)

    def lake_state(self) -> LakeState:
        """The pipeline's state in its lake: built once per run by the opening, and passed on."""
        from airflow_mysql_cdc.engine.lake.state.store import LakeState  # Delta: not at DAG parse

        return LakeState(self.lake_root, self.pipeline_id, self.lake_storage_options())

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
    def from_dict(cls, data: JsonObject) -> ApplyConfig:
        refuse_credentials(data, where="the binlog application's configuration", error=ApplyConfigError)
        known = set(cls.__dataclass_fields__) - {"secret_storage_options"}  # from the environment only
        unknown = sorted(set(data) - known)
        if unknown:
            raise ApplyConfigError(f"unknown configuration keys: {', '.join(unknown)}")
        values = dict(data)
        for key in ("tables", "pause", "resume"):
            values[key] = tuple(values.get(key) or ())
        values["start_gtids"] = _gtid_set(values.get("start_gtids"), "start_gtids")
        unsettled = values.get("unsettled") or {}
        values["unsettled"] = {str(table): _gtid_set(text, "unsettled") for table, text in unsettled.items()}
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
    transactions_by_table: dict[str, int] = field(default_factory=dict)
    """Per table, the applied transactions that changed it (one transaction may change several)."""
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
    schema_changes: list[TableEvolution] = field(default_factory=list)
    """Every table a DDL touched, with its action and reason, in binlog order; and every table this
    run stopped (action ``stop``: its lake copy was found wrong, :attr:`stopped`)."""
    stopped_tables: dict[str, str] = field(default_factory=dict)
    """Every configured table out of the pipeline because it was stopped, in this run or an earlier
    one and not re-snapshotted since, with what to tell the user (each run says it again)."""
    driver_peak_rss_bytes: int | None = None
    """The application driver's peak resident memory (set by the entry point; the benchmarks read it)."""
    binlog_bytes_read: int = 0
    """Binlog event bytes the driver's reader received (the ``mysql_cdc.binlog.bytes_read`` metric);
    a parallel catch-up's range readers, on executors, are not counted."""

    @property
    def stopped(self) -> list[TableEvolution]:
        """Tables this run stopped: the run fails once it published the other tables' record."""
        return [evolution for evolution in self.schema_changes if evolution.action == "stop"]

    def record_stop(self, evolution: TableEvolution) -> None:
        """A table this run stopped (a batch's check, or another writer's change found at open)."""
        self.schema_changes.append(evolution)
        self.stopped_tables[evolution.table] = evolution.describe()

    @property
    def to_resnapshot(self) -> list[str]:
        """Tables that left the pipeline at a schema change of this run and wait for a new snapshot:
        those whose last schema change in the run is a ``resnapshot`` (the one rule: the replicate
        operator snapshots exactly these and applies on)."""
        last = {evolution.table: evolution for evolution in self.schema_changes}
        return sorted(table for table, evolution in last.items() if evolution.waits_for_snapshot)

    @classmethod
    def combine(cls, steps: Sequence[ApplyResult]) -> ApplyResult:
        """One result for a run that applied in several steps, in order (a parallel catch-up then its
        rest, or applications with re-snapshots between them): the first step's start, the last
        step's end and position facts, the sums of what was applied, every schema change and join."""
        if not steps:
            raise ValueError("combine needs at least one step")
        first, last = steps[0], steps[-1]
        rows: dict[str, int] = {}
        transactions: dict[str, int] = {}
        caught_up: dict[str, GtidSet] = {}
        stopped: dict[str, str] = {}
        for step in steps:
            stopped.update(step.stopped_tables)
            for table, count in step.rows_by_table.items():
                rows[table] = rows.get(table, 0) + count
            for table, count in step.transactions_by_table.items():
                transactions[table] = transactions.get(table, 0) + count
            caught_up.update(step.caught_up)
        stamps = [s.last_commit_timestamp_us for s in steps if s.last_commit_timestamp_us is not None]
        return replace(
            last,
            requested_start=first.requested_start,
            resumed_from=first.resumed_from,
            transactions=sum(step.transactions for step in steps),
            rows_by_table=rows,
            transactions_by_table=transactions,
            batches=sum(step.batches for step in steps),
            binlog_bytes_read=sum(step.binlog_bytes_read for step in steps),
            duration_s=round(sum(step.duration_s for step in steps), 3),
            last_commit_timestamp_us=stamps[-1] if stamps else None,
            caught_up=caught_up,
            stopped_tables=stopped,
            already_applied=all(step.already_applied for step in steps),
            schema_changes=[change for step in steps for change in step.schema_changes],
            driver_peak_rss_bytes=max(
                (s.driver_peak_rss_bytes for s in steps if s.driver_peak_rss_bytes is not None), default=None
            ),
        )

    def to_dict(self) -> JsonObject:
        """The JSON form: every GTID set as MySQL's text."""
        data = {item.name: getattr(self, item.name) for item in fields(self)}
        data["rows_by_table"] = dict(self.rows_by_table)
        data["transactions_by_table"] = dict(self.transactions_by_table)
        data["caught_up"] = {table: str(end) for table, end in self.caught_up.items()}
        data["stopped_tables"] = dict(self.stopped_tables)
        data["schema_changes"] = [change.to_json() for change in self.schema_changes]
        for key in _GTID_SET_FIELDS:
            data[key] = str(data[key])
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApplyResult:
        """The result read back from :meth:`to_dict` (the Airflow side reads the result file so);
        keys it does not know are ignored, so a result of a newer engine still reads."""
        known = {item.name for item in fields(cls)}
        if missing := sorted({"pipeline_id", "end_gtids"} - set(data)):
            raise ValueError(
                f"the binlog application's result lacks {', '.join(missing)}: it was not written by this "
                "version's application (is the Spark driver running another installed version?)"
            )
        values = {key: value for key, value in data.items() if key in known}
        for key in _GTID_SET_FIELDS:
            values[key] = GtidSet.parse(values.get(key) or "")
        stopped = values.get("stopped_tables") or {}  # absent from older results
        values["stopped_tables"] = {str(table): str(why) for table, why in stopped.items()}
        for key in ("rows_by_table", "transactions_by_table"):  # the latter absent from older results
            values[key] = {str(t): int(n) for t, n in (values.get(key) or {}).items()}
        values["caught_up"] = {t: GtidSet.parse(end) for t, end in (values.get("caught_up") or {}).items()}
        values["schema_changes"] = [TableEvolution.from_json(c) for c in values.get("schema_changes") or ()]
        return cls(**values)

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


_GTID_SET_FIELDS = ("requested_start", "resumed_from", "end_gtids", "consistent_point")
