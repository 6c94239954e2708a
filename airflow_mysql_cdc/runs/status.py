"""``airflow-mysql-cdc status``: a pipeline's chain and each table's state, read from its lake.

What an operator otherwise reads from Delta by hand: the pipeline's position and writer (the
``_cdc/state`` row), the published chain (``_cdc/checkpoints``: segment, start and end sets, rows per
table, what each run was asked to do), and per table whether it is a member and with which
snapshot, its latest snapshot's progress, a pause or departure mark, and the current Delta version
and data file count of its target and changelog. A departure mark a later snapshot lifted (a table
re-snapshotted within a run keeps the mark on its target) shows as history beside "member", never
as "left the pipeline" (``lake.departure_holds``, the rule admission asks; issue 33).

Invariant: read-only. Every fact comes through :mod:`airflow_mysql_cdc.runs.lake`, the same readers a
run places itself with, so what this prints is what the next run will find; nothing here takes the
pipeline's lease or writes, so it is safe next to a running pipeline (it may show a state one commit
old). Credentials for an object-store lake come from the environment delta-rs reads (``AWS_*``), never
from the command line, so they stay out of process listings.

Guarded by tests/unit/airflow/test_status_command.py (formatting, a wrong lake, another pipeline's
lake) and by the daily test in tests/integration/test_pipeline_dag.py, which runs the command on the
lake its runs produced.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_mysql_cdc.engine.errors import CdcError, NextStep
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.hooks.next_steps import with_next_step
from airflow_mysql_cdc.runs import lake

StorageOptions = dict[str, str] | None

EXIT_OK = 0
EXIT_NOT_FOUND = 2
"""The lake holds no pipeline there, or another pipeline's state: a wrong argument."""


class StatusError(Exception):
    """What the command cannot show, and which argument to check."""


@dataclass(frozen=True)
class DeltaTableFigures:
    path: str
    version: int | None
    """None: no Delta table at ``path``."""
    files: int | None


@dataclass(frozen=True)
class SnapshotStatus:
    """A table's latest snapshot as the status shows it (its JSON keys are the command's output)."""

    id: str
    chunks_done: int
    chunks_total: int
    complete: bool

    def describe(self) -> str:
        state = "complete" if self.complete else "unfinished (the next snapshot resumes it)"
        return f"{self.id}, {self.chunks_done}/{self.chunks_total} chunk(s), {state}"


@dataclass(frozen=True)
class TableStatus:
    table: str
    member: bool
    member_snapshot_id: str | None
    """The snapshot the table joined the stream with ("" without one); None when not a member."""
    snapshot: SnapshotStatus | None
    """The latest snapshot (None: never taken)."""
    paused: dict[str, Any] | None
    departed: dict[str, Any] | None
    """The departure mark while it keeps the table out of the pipeline (None: no mark holds)."""
    snapshotted_again_after: dict[str, Any] | None
    """A departure mark a snapshot taken after it lifted (a re-snapshot): where the table had left."""
    target: DeltaTableFigures
    changelog: DeltaTableFigures


@dataclass(frozen=True)
class PipelineStatus:
    pipeline_id: str
    lake_root: str
    position: str | None
    """The pipeline's applied GTID set (None: no state row, only published records)."""
    epoch: int | None
    writer: str | None
    """The writer holding the lease ("" when released)."""
    updated_at: str | None
    batches_in_flight: int
    record_count: int
    records: list[dict[str, Any]] = field(default_factory=list)
    """The newest records of the chain, oldest first."""
    tables: list[TableStatus] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_status(
    lake_root: str,
    pipeline_id: str,
    storage_options: StorageOptions = None,
    *,
    tables: Sequence[str] = (),
    last: int = 5,
) -> PipelineStatus:
    """The pipeline's status; raises :class:`StatusError` when the lake holds no such pipeline."""
    try:
        state = lake.pipeline_state(lake_root, pipeline_id, storage_options)
        records = [
            record.to_dict()
            for record in lake.checkpoint_log(lake_root, pipeline_id, storage_options).records()
        ]
    except CdcError as error:  # another pipeline's state or chain
        raise StatusError(
            f"{error}. Pass the pipeline id this lake belongs to (--pipeline-id: the pipeline JSON's "
            "pipeline_id, by default the DAG id)."
        ) from error
    layout = LakeLayout(lake_root)
    if state is None and not records:
        raise StatusError(
            f"no airflow-mysql-cdc pipeline in {lake_root}: neither {layout.state} nor {layout.checkpoints} "
            "is a Delta table. Check --lake-root (the pipeline JSON's lake_root); a pipeline whose first "
            "run has not published yet has nothing to show either."
        )
    members = (state.members if state is not None else None) or {}
    names = _table_names(members, records, tables)
    return PipelineStatus(
        pipeline_id=pipeline_id,
        lake_root=lake_root,
        position=str(state.applied_gtids) if state is not None else None,
        epoch=state.epoch if state is not None else None,
        writer=state.owner if state is not None else None,
        updated_at=_iso_from_us(state.updated_at_us) if state is not None else None,
        batches_in_flight=len(state.intents or {}) if state is not None else 0,
        record_count=len(records),
        records=records[-last:] if last > 0 else [],
        tables=[_table_status(lake_root, name, members, storage_options) for name in names],
    )


def _table_names(
    members: Mapping[str, str], records: list[dict[str, Any]], asked: Sequence[str]
) -> list[str]:
    """Members, tables any record names, and the ones asked for, in order, each once."""
    names = dict.fromkeys(str(TableRef.parse(name)) for name in asked)
    names |= dict.fromkeys(members)
    for record in records:
        names |= dict.fromkeys(record.get("tables") or {})
    return sorted(names)


def _table_status(
    lake_root: str, name: str, members: Mapping[str, str], storage_options: StorageOptions
) -> TableStatus:
    ref = TableRef.parse(name)
    layout = LakeLayout(lake_root)
    progress = lake.snapshot_progress(lake_root, ref, storage_options)
    paused = lake.pause(lake_root, ref, storage_options)
    departed = lake.departure(lake_root, ref, storage_options)
    holds = lake.departure_holds(departed, progress)
    return TableStatus(
        table=name,
        member=name in members,
        member_snapshot_id=members.get(name),
        snapshot=None
        if progress is None
        else SnapshotStatus(progress.snapshot_id, len(progress.done), len(progress.plan), progress.complete),
        paused=asdict(paused) if paused is not None else None,
        departed=departed.to_json() if departed is not None and holds else None,
        snapshotted_again_after=departed.to_json() if departed is not None and not holds else None,
        target=_figures(layout.target(ref.schema, ref.table), storage_options),
        changelog=_figures(layout.changelog(ref.schema, ref.table), storage_options),
    )


def _figures(path: str, storage_options: StorageOptions) -> DeltaTableFigures:
    figures = lake.delta_figures(path, storage_options)
    return DeltaTableFigures(path, *(figures if figures is not None else (None, None)))


def _iso_from_us(us: int) -> str:
    return datetime.datetime.fromtimestamp(us / 1e6, datetime.UTC).isoformat(timespec="seconds")


def format_status(status: PipelineStatus) -> str:
    """The status as the terminal shows it: the pipeline, the newest records, then one block per table."""
    lines = [f"Pipeline {status.pipeline_id} in {status.lake_root}"]
    if status.position is None:
        lines.append("  state: none (_cdc/state is missing; the records below are all there is)")
    else:
        writer = "released" if not status.writer else f"held by {status.writer}"
        lines += [
            f"  position (applied GTID set): {status.position or '(empty)'}",
            f"  writer: {writer}, epoch {status.epoch}, last state commit {status.updated_at}",
            f"  batches in flight: {status.batches_in_flight}",
        ]
    lines.append(f"Chain: {status.record_count} record(s), the last {len(status.records)}:")
    for record in status.records:
        segment = f"{record.get('segment_start') or '(start)'} -> {record.get('segment_end')}"
        again = "  (already applied)" if record.get("already_applied") else ""
        lines.append(f"  {segment}  run {record['run_id']}{again}")
        lines.append(f"    end set: {record['end_gtids'] or '(empty)'}")
        for table, figures in sorted((record.get("tables") or {}).items()):
            lines.append(f"    {table}: {_pairs(figures)}")
        for action in record.get("actions") or []:
            lines.append(f"    action: {_pairs(action)}")
    lines.append("Tables:")
    for table in status.tables:
        lines.append(f"  {table.table}: {_standing(table)}")
        lines.append(f"    snapshot: {table.snapshot.describe() if table.snapshot is not None else 'none'}")
        for kind, figures in (("target", table.target), ("changelog", table.changelog)):
            shown = (
                "none" if figures.version is None else f"version {figures.version}, {figures.files} file(s)"
            )
            lines.append(f"    {kind}: {shown}  ({figures.path})")
    return "\n".join(lines)


def _standing(table: TableStatus) -> str:
    if _stopped(table):
        assert table.departed is not None
        words = lake.stopped_words(table.table, table.departed["reason"])
        return f"STOPPED, not streamed: {with_next_step(words, NextStep.resnapshot(table.table))}"
    if table.departed is not None and table.departed["action"] != "stop":
        departed = table.departed
        return f"left the pipeline at {departed['gtid']} ({departed['action']}: {departed['reason']})"
    if table.paused is not None:
        return f"paused at {table.paused['paused_at']} by run {table.paused['run_id']}"
    if table.member:
        joined = f"member (joined with snapshot {table.member_snapshot_id or '(none)'})"
        left = table.snapshotted_again_after
        if left is not None:
            joined += (
                f"; snapshotted again after it left at {left['gtid']} ({left['action']}: {left['reason']})"
            )
        return joined
    return "not a member (joins at the next run that snapshots it)"


def _stopped(table: TableStatus) -> bool:
    """Its lake copy was found wrong and no snapshot replaced it since (``Departure.holds_for``)."""
    departed = table.departed
    latest = table.snapshot.id if table.snapshot is not None else ""
    return departed is not None and departed["action"] == "stop" and departed.get("snapshot_id", "") == latest


def _pairs(values: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{key}={json.dumps(value) if isinstance(value, dict | list) else value}"
        for key, value in values.items()
    )


def _storage_options(pairs: Sequence[str]) -> StorageOptions:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise StatusError(f"--storage-option {pair!r} must be KEY=VALUE")
        options[key] = value
    return options or None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="airflow-mysql-cdc",
        description="Inspect an airflow-mysql-cdc pipeline in its lake (read-only).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    status = commands.add_parser("status", help="the checkpoint chain and each table's state")
    status.add_argument("--lake-root", required=True, help="the pipeline JSON's lake_root (a path or URI)")
    status.add_argument("--pipeline-id", required=True, help="the pipeline JSON's pipeline_id (the DAG id)")
    status.add_argument(
        "--table", action="append", default=[], help="schema.table to show besides the members (repeatable)"
    )
    status.add_argument("--last", type=int, default=5, help="how many of the newest records to show (5)")
    status.add_argument(
        "--storage-option",
        action="append",
        default=[],
        help="public delta-rs storage option KEY=VALUE (endpoint, region); credentials from the environment",
    )
    status.add_argument("--json", action="store_true", help="print JSON instead of text")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    try:
        status = read_status(
            arguments.lake_root,
            arguments.pipeline_id,
            _storage_options(arguments.storage_option),
            tables=arguments.table,
            last=arguments.last,
        )
    except (StatusError, ValueError) as error:
        print(f"airflow-mysql-cdc status: {error}", file=sys.stderr)
        return EXIT_NOT_FOUND
    print(json.dumps(status.to_json(), indent=2) if arguments.json else format_status(status))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
