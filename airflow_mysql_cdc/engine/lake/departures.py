"""A table that left the pipeline (dropped, renamed away, or waiting for a re-snapshot), marked in the lake.

Invariant: a table leaves the pipeline only at a DDL's position, in the same step that removes it from
the pipeline's members (:meth:`~.delta_sink.DeltaSink.apply_schema_change`), and its target table
keeps every row it had at that position. The mark (the target's table property
``airflow_mysql_cdc.left_pipeline``) records the DDL's GTID, so a table is taken back only through a
snapshot whose stream start contains that GTID: an older snapshot of it, caught up through the DDL
again, would meet the same change again. What the mark means for a configured table (gone, or
waiting for a snapshot) is one rule,
:func:`~airflow_mysql_cdc.engine.mysql.table_standing.judge_table`, which the plan and admission ask
with the mark's GTID (docs/operations.md, "Schema changes").

A *stopped* table (action ``stop``: its lake copy was found wrong, :mod:`.batch_check` and
:mod:`.outside_changes`) leaves the same way, at a batch's position or at a run's open, but no GTID
says when it may come back: it stays out, every run saying so, until an operator re-snapshots it.
Its mark names the snapshot the table was streamed with (:attr:`Departure.snapshot_id`, like a
pause mark), and holds while that is still the table's latest (:meth:`Departure.holds_for`); the
plan never snapshots it on its own (``plan_segment``), so a wrong table is never quietly replaced.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from deltalake import CommitProperties, DeltaTable

from airflow_mysql_cdc.engine.lake.evolution import stopped_words
from airflow_mysql_cdc.engine.mysql.table_standing import judge_table
from airflow_mysql_cdc.engine.values.gtid import GtidSet

DEPARTURE_PROPERTY = "airflow_mysql_cdc.left_pipeline"


@dataclass(frozen=True)
class Departure:
    """Why and where a table left: ``action`` is ``leave`` (dropped/renamed away), ``resnapshot``
    or ``stop`` (its lake copy is wrong; ``gtid`` may be empty)."""

    table: str
    gtid: str
    action: str
    reason: str
    statement: str
    snapshot_id: str = ""
    """The snapshot the table was streamed with when it left ("" without one)."""

    @property
    def stopped(self) -> bool:
        return self.action == "stop"

    def holds_for(self, latest_snapshot_id: str) -> bool:
        """A stop still holds: no snapshot replaced the table's rows since (module docstring)."""
        return self.stopped and latest_snapshot_id == self.snapshot_id

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "gtid": self.gtid,
            "action": self.action,
            "reason": self.reason,
            "statement": self.statement,
            "snapshot_id": self.snapshot_id,
        }

    def describe(self) -> str:
        if self.stopped:
            return stopped_words(self.table, self.reason)
        verb = "is to be snapshotted again" if self.action == "resnapshot" else "left the pipeline"
        return f"{self.table} {verb} at {self.gtid}: {self.reason}"


def departure_holds(departure: Departure | None, snapshot_stream_start: GtidSet | None) -> bool:
    """The mark still keeps the table out: no snapshot taken after its DDL (one whose stream start
    holds the mark's GTID) brought it back. The mark stays on a target a new snapshot brought back
    (a ``resnapshot`` within a run), so a reader that only asked "is there a mark?" took a streaming
    table for gone: verify skipped it for good and ``status`` showed it as departed (issue 33). The
    rule is :func:`~airflow_mysql_cdc.engine.mysql.table_standing.judge_table`, the one admission asks.
    """
    if departure is None:
        return False
    return judge_table(
        on_source=None, left_at=departure.gtid, snapshot_stream_start=snapshot_stream_start
    ).out_of_the_pipeline


def mark_departed(table: DeltaTable, departure: Departure, properties: CommitProperties) -> None:
    table.alter.set_table_properties(
        {DEPARTURE_PROPERTY: json.dumps(departure.to_json(), sort_keys=True)},
        raise_if_not_exists=False,
        commit_properties=properties,
    )


def departure_of(table: DeltaTable) -> Departure | None:
    text = table.metadata().configuration.get(DEPARTURE_PROPERTY)
    if not text:
        return None
    data = json.loads(text)
    return Departure(
        data["table"],
        data["gtid"],
        data["action"],
        data["reason"],
        data.get("statement", ""),
        data.get("snapshot_id", ""),
    )
