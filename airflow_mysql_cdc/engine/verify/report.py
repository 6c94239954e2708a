"""What a verification found, per table and in all, and the words a user reads about it.

Invariant: a table's status is ``mismatch`` only for a difference the verification proved (a key
whose read no transaction after the position touched, or the lake lacking a source column with no
DDL after the position); everything it could not decide is ``inconclusive`` with the reason, and
never fails the task. The failure message names, per table, what differs and the repair, and is
made here only (the operator raises it, the entry point prints it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from airflow_mysql_cdc.engine.verify.comparable import describe_example

Status = Literal["clean", "mismatch", "repaired", "inconclusive", "skipped"]


@dataclass
class ChunkReport:
    index: int
    lower: list[Any] | None
    upper: list[Any] | None
    source_checksum: str
    lake_checksum: str
    excluded: int

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
    """Keys left out because a transaction after the position changed them."""
    missing: int = 0
    extra: int = 0
    differing: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    chunks: list[ChunkReport] = field(default_factory=list)
    repair: dict[str, Any] | None = None
    """What a repair wrote (upserted, deleted, target version) and what re-verifying it found."""
    cursor: dict[str, Any] | None = None
    """A sampled table: where its next verification starts."""

    @property
    def differences(self) -> int:
        return self.missing + self.extra + self.differing

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        if self.status in ("inconclusive", "skipped"):
            return f"{self.table}: {self.status}: {self.reason}"
        counts = (
            f"{self.rows_compared} rows compared in {self.chunks_checked}/{self.chunks_planned} chunk(s), "
            f"{self.excluded} left out (changed after the position)"
        )
        if self.status == "clean":
            return f"{self.table}: equal to the source ({counts})"
        found = f"{self.missing} missing, {self.extra} extra, {self.differing} differing"
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

    def to_dict(self) -> dict[str, Any]:
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
            f"{rows} rows compared in {self.seconds:.1f}s"
        )


def failure_message(report: dict[str, Any], task_id: str = "verify_lake") -> str:
    """The task's failure: per mismatched table what differs and the way out (``report``: its dict)."""
    lines = [
        f"{task_id}: the lake differs from the source at the pipeline's position "
        f"{report['position'] or '(empty)'} in {len(report['mismatched'])} table(s). Every difference below "
        "is proven: keys changed after that position were left out, so the source rows compared are "
        "their values at the position the lake says it holds."
    ]
    for table in report["tables"]:
        if table["status"] != "mismatch":
            continue
        if table["reason"]:
            lines.append(
                f"- {table['table']}: {table['reason']}. A repair cannot fix columns: re-snapshot the table "
                f'(trigger the DAG with {{"resnapshot": ["{table["table"]}"]}}).'
            )
            continue
        found = f"{table['missing']} missing, {table['extra']} extra, {table['differing']} differing"
        examples = "; ".join(describe_example(shown) for shown in table["examples"])
        repaired = table.get("repair") or {}
        still = " (still after a repair: " + repaired.get("outcome", "") + ")" if repaired else ""
        lines.append(
            f"- {table['table']}: {found} of {table['rows_compared']} rows compared{still}"
            + (f"; e.g. {examples}" if examples else "")
        )
    lines.append(
        'What to do: set "verify_repair": true in the pipeline JSON and clear this task: under the '
        "pipeline's lease it rewrites exactly the differing keys with their values at the position, then "
        'verifies them again (docs/operations.md, "Verifying the lake"). Or re-snapshot the table. Then '
        "look for what wrote the target besides the pipeline (another job, a restore): the pipeline alone "
        "keeps it exact."
    )
    return "\n".join(lines)
