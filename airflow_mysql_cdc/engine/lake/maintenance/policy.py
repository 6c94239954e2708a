"""How often and how hard the lake is maintained: the pipeline JSON's ``maintenance`` object, typed.

Invariant: a policy is validated where it is read (the pipeline's configuration file, the
maintenance application's configuration), so a wrong value fails the DAG's import or the task at
once, naming the key, never halfway through a maintenance run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from airflow_mysql_cdc.engine.errors import ConfigurationError
from airflow_mysql_cdc.engine.values.json_values import JsonObject

MIB = 1024 * 1024


class MaintenancePolicyError(ConfigurationError, ValueError):
    """A maintenance setting has a wrong key or value."""


@dataclass(frozen=True)
class MaintenancePolicy:
    """Every key of the pipeline JSON's ``"maintenance"`` object, with its default."""

    enabled: bool = True
    """Run the DAG's ``maintain_lake`` task's work (off: the task only says it is off)."""
    interval_hours: float = 24.0
    """At most one maintenance per this many hours (0: every run)."""
    small_files: int = 16
    """Compact a table (or a closed changelog day) once it has this many files below half the target size."""
    target_file_mb: int = 16
    """Target size of data files, set as ``delta.targetFileSize`` on targets and changelogs, so any
    writer's compaction (another job's OPTIMIZE too) keeps files this size: a MERGE then rewrites
    only the few files whose key range a batch touches."""
    max_file_rows: int = 200_000
    """Rows a target's or changelog's data file holds at most: a MERGE rewrites whole files, so it
    costs about the rows of the files it touches. Narrow rows that compress well fit hundreds of
    thousands per MiB, so the file size set on a table is the smaller of ``target_file_mb`` and this
    many rows at the table's own bytes per row (a power of two MiB, at least 1)."""
    vacuum_retention_hours: float = 168.0
    """Files a target or changelog no longer references are deleted this long after (readers of
    older versions, time travel); a table's own ``delta.deletedFileRetentionDuration`` wins if longer."""

    def __post_init__(self) -> None:
        if self.interval_hours < 0:
            raise MaintenancePolicyError(
                f"maintenance.interval_hours must be 0 or more, not {self.interval_hours}"
            )
        if self.small_files < 2:
            raise MaintenancePolicyError(
                f"maintenance.small_files must be at least 2, not {self.small_files}"
            )
        if not 1 <= self.target_file_mb <= 4096:
            raise MaintenancePolicyError(
                f"maintenance.target_file_mb must be between 1 and 4096, not {self.target_file_mb}"
            )
        if self.max_file_rows < 1000:
            raise MaintenancePolicyError(
                f"maintenance.max_file_rows must be at least 1000, not {self.max_file_rows}"
            )
        if self.vacuum_retention_hours < 1:
            raise MaintenancePolicyError(
                f"maintenance.vacuum_retention_hours must be at least 1 (readers in flight need the files "
                f"they are reading), not {self.vacuum_retention_hours}"
            )

    @property
    def target_file_bytes(self) -> int:
        return self.target_file_mb * MIB

    def sized_for(self, rows: int, size_bytes: int) -> MaintenancePolicy:
        """This policy with the file size for a table of ``rows`` rows in ``size_bytes`` bytes."""
        if rows <= 0 or size_bytes <= 0:
            return self
        wanted = size_bytes / rows * self.max_file_rows / MIB
        mib = 1
        while mib * 2 <= min(wanted, self.target_file_mb):
            mib *= 2
        return replace(self, target_file_mb=min(mib, self.target_file_mb))

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JsonObject | None) -> MaintenancePolicy:
        data = dict(data or {})
        known = {item.name for item in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise MaintenancePolicyError(
                f"unknown maintenance keys: {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
        try:
            return cls(**data)
        except TypeError as error:
            raise MaintenancePolicyError(f"bad maintenance settings: {error}") from error
