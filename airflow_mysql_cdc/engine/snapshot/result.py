"""What a snapshot application did, per table and in all: the application's typed result.

Invariant: this is the whole contract between the snapshot application and its operator: the
application writes :meth:`SnapshotResult.to_dict` to its result file, the operator (its log lines,
lineage and metrics) reads :meth:`SnapshotResult.from_dict`; its JSON is the XCom ``snapshot`` the
binlog application's segment starts from, so its keys never change. Where streaming starts
(``stream_start``: every table's low watermarks in common) and where every table is exact
(``consistent_point``: all their high watermarks) are computed here, once. No Delta, Arrow or
Spark import, so the operator reads it at task time without loading them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from airflow_mysql_cdc.engine.values.gtid import GtidSet


@dataclass(frozen=True)
class TableSnapshotResult:
    """One table's snapshot: which snapshot, how much of it ran now, and its watermarks."""

    table: str
    snapshot_id: str
    resumed: bool
    chunks_total: int
    chunks_run: int
    rows: int
    stream_start: GtidSet
    """The GTID set streaming must start from for this table (the earliest low watermark)."""
    consistent_point: GtidSet
    """The table is exact at positions containing this set (its chunks' high watermarks), not before."""
    duration_s: float
    restarts: int = 0
    """How often a DDL on the table restarted its snapshot (:mod:`.table_definition`)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "snapshot_id": self.snapshot_id,
            "resumed": self.resumed,
            "chunks_total": self.chunks_total,
            "chunks_run": self.chunks_run,
            "rows": self.rows,
            "stream_start": str(self.stream_start),
            "consistent_point": str(self.consistent_point),
            "duration_s": self.duration_s,
            "restarts": self.restarts,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableSnapshotResult:
        return cls(
            table=str(data["table"]),
            snapshot_id=str(data["snapshot_id"]),
            resumed=bool(data["resumed"]),
            chunks_total=int(data["chunks_total"]),
            chunks_run=int(data["chunks_run"]),
            rows=int(data["rows"]),
            stream_start=GtidSet.parse(data.get("stream_start") or ""),
            consistent_point=GtidSet.parse(data.get("consistent_point") or ""),
            duration_s=float(data.get("duration_s") or 0.0),
            restarts=int(data.get("restarts") or 0),
        )

    @property
    def rows_per_second(self) -> float | None:
        """None when the table took no measurable time (nothing ran, or a clock step)."""
        return self.rows / self.duration_s if self.duration_s > 0 else None


@dataclass(frozen=True)
class SnapshotResult:
    """The snapshot application's result: its tables, and where the stream after them starts and ends."""

    tables: tuple[TableSnapshotResult, ...] = ()
    stream_start: GtidSet = field(default_factory=GtidSet)
    """Where the binlog application streams from: the low watermarks every table has in common."""
    consistent_point: GtidSet = field(default_factory=GtidSet)
    """Where every table is exact: the union of their high watermarks (a segment ends no earlier)."""
    bytes_to_driver: int | None = None
    """What the Spark tasks sent to the driver (None: the windows ran in the driver, ``--no-spark``)."""
    driver_peak_rss_bytes: int | None = None
    """Peak resident memory of the driver, for capacity planning (None: not measured)."""

    @classmethod
    def of_tables(cls, tables: Iterable[TableSnapshotResult]) -> SnapshotResult:
        """The result of ``tables``: streaming starts where all their low watermarks meet."""
        done = tuple(tables)
        stream_start = done[0].stream_start if done else GtidSet()
        consistent_point = GtidSet()
        for table in done:
            stream_start &= table.stream_start
            consistent_point |= table.consistent_point
        return cls(done, stream_start, consistent_point)

    def to_dict(self) -> dict[str, Any]:
        """The result file's and the XCom's JSON (the measurements only when measured)."""
        data: dict[str, Any] = {
            "tables": [table.to_dict() for table in self.tables],
            "stream_start": str(self.stream_start),
            "consistent_point": str(self.consistent_point),
        }
        if self.bytes_to_driver is not None:
            data["bytes_to_driver"] = self.bytes_to_driver
        if self.driver_peak_rss_bytes is not None:
            data["driver_peak_rss_bytes"] = self.driver_peak_rss_bytes
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SnapshotResult:
        return cls(
            tuple(TableSnapshotResult.from_dict(table) for table in data.get("tables") or ()),
            GtidSet.parse(data.get("stream_start") or ""),
            GtidSet.parse(data.get("consistent_point") or ""),
            data.get("bytes_to_driver"),
            data.get("driver_peak_rss_bytes"),
        )
