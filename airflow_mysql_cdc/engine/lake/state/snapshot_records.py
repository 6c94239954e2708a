"""A table's snapshot records, typed: a snapshot's start, one finished chunk, the mark of none.

Invariant: the JSON of a record is what every version wrote, so the rows of a snapshot log (and
the commit metadata of a version 0.1 lake) read back unchanged and a record written here reads in
the version before: ``record_from_json(r.to_json()) == r``, and keys an older version left out
(a start without ``definition``, written before definitions were recorded) stay out. Code above
the snapshot log reads attributes; keys are named only here.

A start record keeps the table definition as the JSON it was recorded in: reading it back checks
that every column maps exactly as it did (:meth:`TableDefinition.from_json`, ``ValueError``
otherwise), which only the snapshot's resume wants to know, not maintenance or a status. Chunk
bounds stay in their exact JSON form (:mod:`airflow_mysql_cdc.engine.snapshot.key_codec`, which
the snapshot layer above decodes them with). Guarded by
``tests/unit/test_snapshot_records.py`` and, on lakes written by 0.1,
``test_a_version_0_1_lake_moves_its_snapshot_records_on_the_first_run_and_survives_the_clean_up``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from airflow_mysql_cdc.engine.errors import LakeMismatchError
from airflow_mysql_cdc.engine.mysql.definition import TableDefinition
from airflow_mysql_cdc.engine.values.gtid import GtidSet

NO_SNAPSHOT = "none"
"""Phase of the one migrated row that says: the legacy history held no snapshot of this table."""


class SnapshotRecordError(LakeMismatchError, ValueError):
    """A snapshot record this version cannot read (a phase it does not know)."""


@dataclass(frozen=True)
class ChunkBounds:
    """A chunk's index and its key bounds as recorded (key_codec JSON; None: unbounded)."""

    index: int
    lower: list[Any] | None
    upper: list[Any] | None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "lower": self.lower, "upper": self.upper}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChunkBounds:
        return cls(int(data["index"]), data["lower"], data["upper"])


@dataclass(frozen=True)
class SnapshotStart:
    """A snapshot began: its plan of chunks, the row key its chunks cut, the definition it read."""

    phase: ClassVar[Literal["start"]] = "start"
    snapshot_id: str
    key: tuple[str, ...]
    plan: tuple[ChunkBounds, ...]
    definition: dict[str, Any] | None = None
    """The table's definition as recorded (None: a snapshot taken before definitions were)."""

    def table_definition(self) -> TableDefinition | None:
        """The recorded definition; ``ValueError`` when it does not read back exactly."""
        return TableDefinition.from_json(self.definition) if self.definition is not None else None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.snapshot_id,
            "phase": self.phase,
            "key": list(self.key),
            "plan": [chunk.to_json() for chunk in self.plan],
        }
        if self.definition is not None:
            data["definition"] = self.definition
        return data


@dataclass(frozen=True)
class ChunkDone:
    """A chunk of snapshot ``snapshot_id`` is in the target: its rows as of its high watermark."""

    phase: ClassVar[Literal["chunk"]] = "chunk"
    snapshot_id: str
    chunk: ChunkBounds
    low_watermark: GtidSet
    high_watermark: GtidSet
    rows: int
    high_read_us: int | None = None
    """The source's clock when the high watermark was read (None: a record written before 1.3); see
    :attr:`~airflow_mysql_cdc.engine.snapshot.window.ChunkSnapshot.high_read_us`."""

    def to_json(self) -> dict[str, Any]:
        record = {
            "id": self.snapshot_id,
            "phase": self.phase,
            "chunk": self.chunk.to_json(),
            "low": str(self.low_watermark),
            "high": str(self.high_watermark),
            "rows": self.rows,
        }
        if self.high_read_us is not None:
            record["high_read_us"] = self.high_read_us
        return record


@dataclass(frozen=True)
class NoSnapshot:
    """The mark a migration leaves when the table's legacy history held no snapshot."""

    phase: ClassVar[Literal["none"]] = "none"
    snapshot_id: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase}


SnapshotRecord = SnapshotStart | ChunkDone | NoSnapshot


def record_from_json(data: Mapping[str, Any]) -> SnapshotRecord:
    """The record of a log row's (or a 0.1 commit's) JSON; a record without a phase is the mark."""
    phase = data.get("phase", NO_SNAPSHOT)
    if phase == SnapshotStart.phase:
        definition = data.get("definition")
        return SnapshotStart(
            str(data["id"]),
            tuple(data.get("key") or ()),
            tuple(ChunkBounds.from_json(chunk) for chunk in data["plan"]),
            dict(definition) if definition is not None else None,
        )
    if phase == ChunkDone.phase:
        return ChunkDone(
            str(data["id"]),
            ChunkBounds.from_json(data["chunk"]),
            GtidSet.parse(data["low"]),
            GtidSet.parse(data["high"]),
            int(data["rows"]),
            int(data["high_read_us"]) if data.get("high_read_us") is not None else None,
        )
    if phase == NO_SNAPSHOT:
        return NoSnapshot()
    raise SnapshotRecordError(
        f"a snapshot record has phase {phase!r}, which this version of airflow-mysql-cdc does not know "
        f"(it knows start, chunk and {NO_SNAPSHOT}): a newer version wrote this lake. Run that version "
        "(upgrade the package where Airflow and Spark run it), or re-snapshot the table into a fresh lake."
    )
