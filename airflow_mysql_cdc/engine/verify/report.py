"""What a verification found, per table and in all, and the words a user reads about it.

Invariant: a table's status is ``mismatch`` only for a difference the verification proved (a key
compared with its row at the position, a key the target holds twice, or the lake lacking a source
column with no DDL after the position); everything it could not decide is ``inconclusive`` with the
reason, and never fails the task. The failure message names, per table, what differs and the way
out by its meaning (repair, re-snapshot), and is made here only; the operator adds how to do that
in Airflow. The report is the whole contract between the application and its operator: the
application writes :meth:`VerifyReport.to_dict`, the operator reads :meth:`VerifyReport.from_dict`.
No Delta or Arrow import here, so the operator reads it without loading either.

Coverage is said, never implied: per table the rows compared of the rows in the ranges checked
(``coverage``; keys left out are the difference), and of the rows the target holds
(``table_rows``: a sample's share). A table not compared (skipped, inconclusive) has coverage 0 and
a compared one under :data:`LOW_COVERAGE` is ``low_coverage``: both are warnings in the log, named
in the summary, and a metric (``mysql_cdc.verify.coverage``), so a green task cannot hide that a
table went unchecked (issue 33: a re-snapshotted table was skipped by every later verification in
an INFO line).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from airflow_mysql_cdc.engine.values.json_values import JsonObject

Status = Literal["clean", "mismatch", "repaired", "inconclusive", "skipped"]
NOT_COMPARED = ("inconclusive", "skipped")
LOW_COVERAGE = 0.9
"""Below this share of the rows in the ranges it checked, a compared table is reported low-coverage."""


@dataclass
class ChunkReport:
    index: int
    lower: list[Any] | None
    upper: list[Any] | None
    source_checksum: str
    lake_checksum: str
    excluded: int
    again: str = ""
    """Why this chunk is checked again (an earlier verification's :mod:`.pending` entry), or empty."""

    @property
    def equal(self) -> bool:
        return self.source_checksum == self.lake_checksum


@dataclass
class TableReport:
    table: str
    status: Status = "clean"
    reason: str = ""
    """Why the table is inconclusive, skipped or differs in its columns (empty otherwise)."""
    chunks_planned: int = 0
    chunks_checked: int = 0
    rows_compared: int = 0
    excluded: int = 0
    """Keys left out: changed after the position, their rows there unknown (:mod:`.changed_keys`)."""
    from_binlog: int = 0
    """Rows compared at the position through the before image of a change after it."""
    table_rows: int | None = None
    """Live rows the target holds (None: not read)."""
    missing: int = 0
    extra: int = 0
    differing: int = 0
    duplicated: int = 0
    """Keys the target holds in two or more live rows (the whole target, whatever was sampled)."""
    rechecked: int = 0
    """Chunks an earlier verification left to check again, checked first by this one."""
    pending: int = 0
    """Chunks this verification leaves to the next one (a difference not repaired, keys left out)."""
    examples: list[JsonObject] = field(default_factory=list)
    chunks: list[ChunkReport] = field(default_factory=list)
    repair: JsonObject | None = None
    """What a repair wrote (upserted, deleted, target version) and what re-verifying it found."""
    cursor: JsonObject | None = None
    """A sampled table: where its next verification starts."""

    @property
    def differences(self) -> int:
        return self.missing + self.extra + self.differing + self.duplicated

    @property
    def compared(self) -> bool:
        return self.status not in NOT_COMPARED

    @property
    def coverage(self) -> float:
        """Rows compared of the rows in the ranges checked (0 for a table not compared)."""
        if not self.compared:
            return 0.0
        meant = self.rows_compared + self.excluded
        return self.rows_compared / meant if meant else 1.0

    @property
    def low_coverage(self) -> bool:
        return self.compared and self.coverage < LOW_COVERAGE

    def to_dict(self) -> JsonObject:
        return asdict(self) | {"coverage": self.coverage, "low_coverage": self.low_coverage}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TableReport:
        """A table's report read back (``coverage`` and ``low_coverage`` are recomputed)."""
        values = {key: value for key, value in data.items() if key not in ("coverage", "low_coverage")}
        values["chunks"] = [ChunkReport(**chunk) for chunk in values.get("chunks", [])]
        return cls(**values)

    def describe_coverage(self) -> str:
        """``55 of 826 rows compared (6.7%)`` and, for a sample, its share of the target."""
        meant = self.rows_compared + self.excluded
        text = f"{self.rows_compared} of {meant} rows compared ({percent(self.coverage)})"
        if self.table_rows is not None and meant < self.table_rows:
            share = percent(self.rows_compared / self.table_rows)
            text += f", {share} of the {self.table_rows} the target holds"
        return text

    def describe(self) -> str:
        if self.status in NOT_COMPARED:
            return f"{self.table}: {self.status}: {self.reason}"
        counts = (
            f"{self.describe_coverage()} in {self.chunks_checked}/{self.chunks_planned} chunk(s), "
            f"{self.excluded} left out (changed after the position, row there unknown)"
        )
        if self.from_binlog:
            counts += f", {self.from_binlog} compared through the binlog (changed after the position)"
        if self.rechecked:
            counts += f", {self.rechecked} chunk(s) checked again first"
        if self.status == "clean":
            return f"{self.table}: equal to the source ({counts})"
        found = f"{self.missing} missing, {self.extra} extra, {self.differing} differing"
        if self.duplicated:
            found += f", {self.duplicated} key(s) held twice"
        if self.status == "repaired":
            return f"{self.table}: {found}, repaired and verified again ({counts})"
        if self.reason:
            return f"{self.table}: {self.reason}"
        return f"{self.table}: {found} ({counts})"


@dataclass
class VerifyReport:
    pipeline_id: str
    mode: str
    position: str = ""
    """The pipeline's applied set the lake was compared at (read under its lease)."""
    skipped: str | None = None
    tables: list[TableReport] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def mismatched(self) -> list[TableReport]:
        return [table for table in self.tables if table.status == "mismatch"]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VerifyReport:
        """The application's result read back (``mismatched`` is recomputed from the tables)."""
        return cls(
            data["pipeline_id"],
            data.get("mode", ""),
            data.get("position") or "",
            data.get("skipped"),
            [TableReport.from_dict(table) for table in data.get("tables", [])],
            data.get("seconds", 0.0),
        )

    def to_dict(self) -> JsonObject:
        return {
            "pipeline_id": self.pipeline_id,
            "mode": self.mode,
            "position": self.position,
            "skipped": self.skipped,
            "tables": [table.to_dict() for table in self.tables],
            "mismatched": [table.table for table in self.mismatched],
            "seconds": self.seconds,
        }

    def summary(self) -> str:
        if self.skipped:
            return f"verify skipped: {self.skipped}"
        by_status: dict[str, int] = {}
        for table in self.tables:
            by_status[table.status] = by_status.get(table.status, 0) + 1
        counts = ", ".join(f"{count} {status}" for status, count in sorted(by_status.items()))
        rows = sum(table.rows_compared for table in self.tables)
        return (
            f"verify ({self.mode}) of {len(self.tables)} table(s) at {self.position or '(empty)'}: {counts}; "
            f"{rows} rows compared in {self.seconds:.1f}s{unchecked_note(self.tables)}"
        )


def describe_example(shown: Mapping[str, Any]) -> str:
    """An example as one line of the failure message."""
    where = shown.get("key") or {"key hash": shown["key_hash"]}
    key_text = ", ".join(f"{name}={value}" for name, value in where.items())
    if shown["kind"] == "differing":
        return f"{key_text}: differs in {', '.join(shown.get('columns', ['*']))}"
    if shown["kind"] == "duplicated":
        return f"{key_text}: held {shown.get('rows', 2)} times in the lake"
    return f"{key_text}: {'missing from the lake' if shown['kind'] == 'missing' else 'extra in the lake'}"


def percent(share: float) -> str:
    """``100%`` only for all of it, ``0%`` only for none: a share in between is rounded down."""
    if share in (0.0, 1.0):
        return f"{share:.0%}"
    return f"{max(math.floor(share * 1000) / 10, 0.1):g}%"


def unchecked(tables: Sequence[TableReport]) -> list[str]:
    """Each table this verification did not compare, or compared under :data:`LOW_COVERAGE`, with
    what was compared and why."""
    lines = []
    for table in tables:
        if not table.compared:
            lines.append(f"{table.table} not compared ({table.status}: {table.reason})")
        elif table.low_coverage:
            meant = table.rows_compared + table.excluded
            lines.append(
                f"{table.table} only {table.rows_compared} of {meant} rows compared "
                f"({percent(table.coverage)}): {table.excluded} key(s) changed after the position "
                "with their rows there unknown were left out; their chunks are checked again by the next "
                "verification"
            )
    return lines


def unchecked_note(tables: Sequence[TableReport]) -> str:
    found = unchecked(tables)
    return f"; NOT FULLY CHECKED: {'; '.join(found)}" if found else ""


REPAIR_CANNOT_FIX_COLUMNS = "A repair cannot fix columns: re-snapshot the table."
REPAIR_OR_RESNAPSHOT = (
    "What to do: verify again with repair on: it checks again first exactly the chunks this verification "
    "proved different (kept in the lake's _cdc/verify log) and, under the pipeline's lease, rewrites the "
    "differing keys with their values at the position, then verifies them again (docs/operations.md, "
    '"Verifying the lake"). Or re-snapshot the table. Then look for what wrote the target besides the '
    "pipeline (another job, a restore): the pipeline alone keeps it exact."
)


def failure_message(report: VerifyReport) -> list[str]:
    """The lines of a verification's failure: what was proven, per mismatched table what differs and
    the way out, by its meaning (the operator adds how to do it in Airflow)."""
    lines = [
        f"the lake differs from the source at the pipeline's position {report.position or '(empty)'} in "
        f"{len(report.mismatched)} table(s). Every difference below is proven: each key was compared with "
        "its row at that position (the row read, or for a key changed after it, the binlog's image of it "
        "from before that change), the position the lake says it holds; a key held twice in the lake is "
        "wrong at any position."
    ]
    for table in report.mismatched:
        if table.reason:
            lines.append(f"- {table.table}: {table.reason}. {REPAIR_CANNOT_FIX_COLUMNS}")
            continue
        found = f"{table.missing} missing, {table.extra} extra, {table.differing} differing"
        if table.duplicated:
            found += f", {table.duplicated} key(s) held twice in the lake"
        examples = "; ".join(describe_example(shown) for shown in table.examples)
        still = f" (still after a repair: {table.repair.get('outcome', '')})" if table.repair else ""
        lines.append(
            f"- {table.table}: {found} of {table.rows_compared} rows compared{still}"
            + (f"; e.g. {examples}" if examples else "")
        )
    lines.append(REPAIR_OR_RESNAPSHOT)
    return lines
