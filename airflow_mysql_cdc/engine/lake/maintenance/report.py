"""What a maintenance run did, per table and in all: the application's typed result.

Invariant: the report is the whole contract between the maintenance application and its operator:
the application writes :meth:`MaintenanceReport.to_dict`, the operator reads
:meth:`MaintenanceReport.from_dict` (no key read by name on the Airflow side). No Delta or Arrow
import here, so the operator reads it without loading either.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from airflow_mysql_cdc.engine.values.json_values import JsonObject


@dataclass
class TableReport:
    """What maintenance did to one table, for the task log and the result (XCom)."""

    path: str
    role: str
    name: str
    files_before: int = 0
    files_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    seconds: float = 0.0
    actions: list[str] = field(default_factory=list)
    vacuumed_files: int = 0

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JsonObject) -> TableReport:
        return cls(**data)

    def describe(self) -> str:
        done = ", ".join(self.actions) or "nothing to do"
        return (
            f"{self.role} {self.name}: {self.files_before} -> {self.files_after} files, "
            f"{_mib(self.bytes_before)} -> {_mib(self.bytes_after)} MiB in {self.seconds:.1f}s ({done})"
        )


@dataclass
class MaintenanceReport:
    """A maintenance run's result: per table what was done, and the totals."""

    pipeline_id: str
    started_at_us: int
    skipped: str | None = None
    """Why nothing was done (not due yet, disabled, nothing to maintain); None: it ran."""
    tables: list[TableReport] = field(default_factory=list)
    pruned_snapshot_records: int = 0
    seconds: float = 0.0

    @property
    def files_before(self) -> int:
        return sum(table.files_before for table in self.tables)

    @property
    def files_after(self) -> int:
        return sum(table.files_after for table in self.tables)

    def to_dict(self) -> JsonObject:
        return {
            "pipeline_id": self.pipeline_id,
            "started_at_us": self.started_at_us,
            "skipped": self.skipped,
            "tables": [table.to_dict() for table in self.tables],
            "pruned_snapshot_records": self.pruned_snapshot_records,
            "files_before": self.files_before,
            "files_after": self.files_after,
            "bytes_before": sum(table.bytes_before for table in self.tables),
            "bytes_after": sum(table.bytes_after for table in self.tables),
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, data: JsonObject) -> MaintenanceReport:
        """The report of an application's result (its totals are recomputed from the tables)."""
        return cls(
            data["pipeline_id"],
            data.get("started_at_us", 0),
            data.get("skipped"),
            [TableReport.from_dict(table) for table in data.get("tables", [])],
            data.get("pruned_snapshot_records", 0),
            data.get("seconds", 0.0),
        )

    def summary(self) -> str:
        if self.skipped:
            return f"maintenance skipped: {self.skipped}"
        return (
            f"maintenance of {len(self.tables)} table(s): {self.files_before} -> {self.files_after} files, "
            f"{self.pruned_snapshot_records} old snapshot record(s) pruned, in {self.seconds:.1f}s"
        )


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f}"
