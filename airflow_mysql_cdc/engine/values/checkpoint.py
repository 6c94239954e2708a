"""The checkpoint record a DAG run publishes, and how a run's start is agreed between two witnesses.

Each run publishes a versioned JSON record of what it applied: the pipeline and source it
belongs to, its start and end GTID sets, its segment bounds, the tables' snapshot state and the
sink's position. The next run starts from the previous *successful* run's end set. The lake's
own applied set (the pipeline state, committed with the data) is the second witness:

- equal: the normal case;
- the lake is ahead of the checkpoint: a failed attempt applied part of this run's segment, or a
  later run already applied it (a cleared old run). The segment end is deterministic, so the run
  recomputes it and applies only what the lake lacks (nothing, for a cleared old run);
- the lake is behind or diverges: the lake lost data or belongs to another history; the run
  fails and says which transactions are in question.

Invariant: a record is only trusted after :meth:`CheckpointRecord.from_dict` validated its format
version and its pipeline; a record of an unknown version or another pipeline is an error.
"""

from __future__ import annotations

import datetime
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject

FORMAT = "airflow-mysql-cdc/checkpoint"
VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)
"""Version 2 added ``previous_run_id``, version 3 ``actions``, version 4 ``published_at``, ``pushed``
and, per table, the lake-derived ``rows_by_op``, ``lake_versions``, ``commit_dates`` and
``snapshotted`` (:mod:`airflow_mysql_cdc.runs.record_facts`); an older record reads as one without."""


def interval_key(moment: datetime.datetime | str) -> str:
    """An interval end as the log's key: ISO 8601 in UTC, so equal instants give equal keys."""
    if isinstance(moment, str):
        moment = datetime.datetime.fromisoformat(moment)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone(datetime.UTC).isoformat()


class CheckpointError(CdcError, ValueError):
    """A checkpoint record cannot be used: malformed, another version, or another pipeline."""


class WitnessDisagreementError(CdcError, RuntimeError):
    """The checkpoint chain and the lake disagree about what was applied."""


@dataclass(frozen=True)
class SourceIdentity:
    server_uuid: str
    host: str
    port: int


@dataclass(frozen=True)
class CheckpointRecord:
    pipeline_id: str
    lake_root: str
    source: SourceIdentity
    start_gtids: str
    end_gtids: str
    segment_start: str | None
    segment_end: str | None
    run_id: str
    tables: dict[str, JsonObject] = field(default_factory=dict)
    """Per table: ``snapshot_id`` (or ""), ``rows_applied`` (the run's changes, counted in the lake),
    and from version 4 ``rows_by_op``, ``commit_dates``, ``lake_versions`` and ``snapshotted``
    (:mod:`airflow_mysql_cdc.runs.record_facts` says what each means)."""
    sink: JsonObject = field(default_factory=dict)
    """The lake's pipeline state after the run: ``applied_gtids``, ``epoch``."""
    already_applied: bool = False
    """True when the lake had this segment before the run started (a retry or cleared run)."""
    previous_run_id: str | None = None
    """The run whose record this one continues (its ``end_gtids`` is this one's ``start_gtids``);
    None for a pipeline's first record."""
    actions: list[JsonObject] = field(default_factory=list)
    """What an operator asked of this run through its conf (re-snapshot, pause, resume, rebase), as
    :meth:`airflow_mysql_cdc.runs.actions.RunActions.to_record` lists it: the audit trail."""
    published_at: str | None = None
    """When the record was made (ISO 8601, UTC; None before version 4): the next run's bound for the
    lake files that can hold its changes (:mod:`airflow_mysql_cdc.engine.lake.run_changes`)."""
    pushed: JsonObject = field(default_factory=dict)
    """The run's other outputs, by name, as the orchestrator reported them; opaque to the engine,
    which only keeps them with the record. A re-run of the interval applies nothing and reports
    these again from here (the Airflow side: :mod:`airflow_mysql_cdc.runs.republish`, since a
    clear deletes a task's XComs). Kept apart from the other fields, which say what the lake holds;
    empty in records of earlier versions. The name is the record format's (version 4), kept."""

    @property
    def end(self) -> GtidSet:
        return GtidSet.parse(self.end_gtids)

    def to_dict(self) -> JsonObject:
        return {"format": FORMAT, "version": VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Any, *, pipeline_id: str) -> CheckpointRecord:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise CheckpointError(
                f"the previous run's checkpoint is not an {FORMAT} record: {str(data)[:200]!r}"
            )
        if data.get("version") not in READABLE_VERSIONS:
            raise CheckpointError(
                f"the previous run's checkpoint has version {data.get('version')!r}; this version of "
                f"airflow-mysql-cdc reads versions {', '.join(map(str, READABLE_VERSIONS))} only. Upgrade "
                "the provider on every worker."
            )
        if data.get("pipeline_id") != pipeline_id:
            raise CheckpointError(
                f"the previous run's checkpoint belongs to pipeline {data.get('pipeline_id')!r}, not "
                f"{pipeline_id!r}: the configuration changed pipelines. A new pipeline needs a "
                "pipeline_id of its own."
            )
        values = {key: value for key, value in data.items() if key not in ("format", "version")}
        try:
            values["source"] = SourceIdentity(**values["source"])
            record = cls(**values)
            GtidSet.parse(record.start_gtids)
            GtidSet.parse(record.end_gtids)
        except (KeyError, TypeError, ValueError) as error:
            raise CheckpointError(f"the previous run's checkpoint is malformed: {error}") from error
        return record


def judge_source(record: CheckpointRecord, server_uuid: str, gtid_executed: GtidSet) -> str:
    """Whether the connection still names the record's source; raises if it is another source.

    A failover changes the server (and its UUID) but not the history: the new server knows the
    checkpoint's transactions (some of them at least, if it lags; the resumability sensor then
    waits). A server that has executed no transaction of any server the checkpoint came from
    belongs to another history: resuming there would mix two sources in one lake.
    """
    if server_uuid == record.source.server_uuid:
        return f"same source server {server_uuid}"
    unknown = sorted(uuid for uuid in record.end.uuids if uuid not in gtid_executed.uuids)
    if unknown and len(unknown) == len(record.end.uuids):
        raise CheckpointError(
            "the checkpoint comes from another source: it was written reading server "
            f"{record.source.server_uuid} ({record.source.host}:{record.source.port}), and the server "
            f"the connection names now ({server_uuid}) has executed no transaction of "
            f"{', '.join(unknown)}. Point the connection back at the pipeline's source (or a replica "
            "of it), or start a new pipeline for this source."
        )
    return (
        f"the source server changed from {record.source.server_uuid} ({record.source.host}:"
        f"{record.source.port}) to {server_uuid}: a failover to a server of the same history"
    )


UNPUBLISHED_APPLIERS = (
    "an earlier attempt of this run; an earlier run killed or marked failed mid-apply, whose interval "
    "this run covers; or a later run"
)
"""Who can have put transactions in the lake beyond the chain's head: an attempt that applied them and
failed before it published a record. The lake does not keep which one, so every kind is named; the
message used to leave out the earlier run, the case a user met (a run killed mid-apply, the next one
going on without it: issue 34)."""


def agree_on_start(
    checkpoint: GtidSet | None, lake_applied: GtidSet | None, *, lake: str, after_apply: bool = False
) -> str:
    """Compare the chain's checkpoint with the lake's applied set; returns why they may differ.

    Raises :class:`WitnessDisagreementError` when starting would lose or duplicate transactions.

    ``after_apply``: the comparison a run makes before it publishes, after its own snapshot and
    apply. The lake is then ahead of the checkpoint by this run's own segment, which is what it
    should be, so the answer says that instead of suspecting a failed attempt or a later run (every
    forward run logged that suspicion once, for nothing: issue 26). Guarded by
    ``test_after_its_own_apply_a_run_says_the_lake_holds_its_segment_without_suspecting_anyone``.
    """
    if checkpoint is None and lake_applied is None:
        return "first run: no checkpoint and an empty lake"
    if checkpoint is None:
        assert lake_applied is not None
        if after_apply:
            return (
                f"the pipeline's first record: the lake at {lake} holds what this run snapshotted and "
                f"applied, up to {lake_applied or '(nothing)'}"
            )
        return (
            f"no record published yet, but the lake at {lake} already applied "
            f"{lake_applied or '(nothing)'} (an earlier attempt of the first run got that far): "
            "continuing from the lake (it is committed with the data)"
        )
    if lake_applied is None:
        raise WitnessDisagreementError(
            f"the previous run's checkpoint says {checkpoint or '(empty)'} was applied, but the lake at "
            f"{lake} has no pipeline state: the lake was removed or lake_root changed. Point lake_root at "
            "the lake, or start the pipeline over in a new lake with a new pipeline id."
        )
    if lake_applied == checkpoint:
        if after_apply:
            return "the lake is where the checkpoint is: this run's segment held no transaction"
        return "the checkpoint and the lake agree"
    if checkpoint.issubset(lake_applied):
        if after_apply:
            return f"the lake holds the checkpoint and this run's segment ({lake_applied - checkpoint})"
        return (
            f"the lake is ahead of the checkpoint by {lake_applied - checkpoint}, applied by an attempt "
            f"that failed before it published a record ({UNPUBLISHED_APPLIERS}): this run recomputes its "
            "segment and applies only what the lake lacks"
        )
    if lake_applied.issubset(checkpoint):
        raise WitnessDisagreementError(
            f"the lake at {lake} is behind the previous run's checkpoint: it lacks "
            f"{checkpoint - lake_applied}. The lake lost commits (restored from a backup, or its history "
            "was rewritten); re-snapshot the tables into a new lake."
        )
    raise WitnessDisagreementError(
        f"the lake at {lake} ({lake_applied}) and the previous run's checkpoint ({checkpoint}) belong to "
        "different histories. Check that lake_root and the connection point at this pipeline's lake and "
        "source."
    )
