"""A table paused by an operator: out of the stream, its lake copy frozen at a recorded position.

Invariant: a paused table's target holds exactly the source as of :attr:`PauseMark.position`, the
pipeline's position when the pause took it out of the members (before that run applied anything,
under the pipeline's claim). While the mark holds, the pipeline neither streams nor snapshots the
table; a *resume* catches it up from that position to the pipeline's (a read of that table alone,
:mod:`~airflow_mysql_cdc.engine.apply.admission`), so nothing between is lost or applied twice.

The mark is the target's table property ``airflow_mysql_cdc.paused``: table properties live in the
table's metadata, which every Delta checkpoint carries, so log clean-up never loses it. It names the
snapshot the table was streamed with: a newer snapshot (a re-snapshot asked for while paused)
replaces the frozen rows, and the mark no longer holds (:meth:`PauseMark.holds_for`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from deltalake import DeltaTable

from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject

PAUSE_PROPERTY = "airflow_mysql_cdc.paused"


@dataclass(frozen=True)
class PauseMark:
    """Where and why a table was paused."""

    table: str
    position: str
    """The GTID set the table's lake copy reflects (the pipeline's position at the pause)."""
    snapshot_id: str
    """The snapshot the table was streamed with when it was paused ("" without one)."""
    run_id: str
    """The Airflow run that paused it (for the audit trail in the chain)."""
    paused_at: str
    """When (ISO 8601, UTC)."""

    @property
    def reflected(self) -> GtidSet:
        return GtidSet.parse(self.position)

    def holds_for(self, latest_snapshot_id: str) -> bool:
        """The table still reflects :attr:`position`: no snapshot replaced its rows since the pause."""
        return latest_snapshot_id == self.snapshot_id

    def describe(self) -> str:
        return f"{self.table} is paused at {self.position or '(empty)'} (run {self.run_id}, {self.paused_at})"

    def to_json(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: JsonObject) -> PauseMark:
        return cls(**{key: str(data.get(key, "")) for key in cls.__dataclass_fields__})


def pause_of(table: DeltaTable) -> PauseMark | None:
    """The table's pause mark (None: not paused; a cleared mark is an empty property)."""
    text = table.metadata().configuration.get(PAUSE_PROPERTY)
    return PauseMark.from_json(json.loads(text)) if text else None


def mark_paused(table: DeltaTable, mark: PauseMark) -> None:
    table.alter.set_table_properties(
        {PAUSE_PROPERTY: json.dumps(mark.to_json(), sort_keys=True)}, raise_if_not_exists=False
    )


def clear_pause(table: DeltaTable) -> None:
    """Remove the mark (an empty value: delta-rs cannot unset a property)."""
    if pause_of(table) is not None:
        table.alter.set_table_properties({PAUSE_PROPERTY: ""}, raise_if_not_exists=False)
