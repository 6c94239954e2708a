"""Whether a configured table is gone: the one rule the prerequisites, the plan and admission ask.

Invariant: a configured table counts as *gone* (dropped or renamed away after it joined, so there is
nothing to snapshot and nothing to stream) only when the source lacks it and the lake vouches that it
joined; a table the source lacks that the lake never held is a configuration error, never skipped
in silence. The lake vouches in one of two ways, depending on when it is asked:

- the binlog application marked the table's departure at the DROP or RENAME
  (:mod:`airflow_mysql_cdc.engine.lake.departures`): what the plan and admission read;
- the lake holds its target table: what the prerequisites read, since they run before this run's
  application has reached the DDL (it marks the departure when it does).

A table the lake marks as departed also stays out of the stream while the source still has it (a
``resnapshot`` departure, or a table re-created under the same name) until a snapshot taken after
the DDL (one whose stream start contains the DDL's GTID) brings it back: an older snapshot, caught
up through the DDL again, would meet the same change again. A table the lake marks *stopped* (its
copy was found wrong) stays out until a snapshot replaces it, which only an operator asks for.

The facts come from three places that cannot import each other (the prerequisites sit below the
lake), so the rule takes plain facts and each caller passes what it knows. Each caller keeps its own
words for users. Guarded by tests/unit/test_table_standing.py, test_prerequisite_rules.py,
test_table_admission_rules.py and tests/unit/airflow/runs/test_segment.py.
"""

from __future__ import annotations

import enum

from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet


class TableStanding(enum.Enum):
    PRESENT = "present"
    """The source has it (or was not asked) and the lake marks no departure that still holds."""
    GONE = "gone"
    """The source lacks it and the lake vouches it joined: nothing to snapshot or stream."""
    NOT_FOUND = "not_found"
    """The source lacks it and the lake never held it: a name to fix in the configuration."""
    AWAITING_SNAPSHOT = "awaiting_snapshot"
    """It left the pipeline at a DDL its latest snapshot predates: out until a new snapshot joins it."""
    STOPPED = "stopped"
    """Its lake copy was found wrong and no snapshot replaced it since: out until an operator asks
    for a re-snapshot (never snapshotted on the pipeline's own initiative)."""

    @property
    def out_of_the_pipeline(self) -> bool:
        """Neither snapshotted nor streamed by this run (a stopped one is snapshotted only on request)."""
        return self in (TableStanding.GONE, TableStanding.AWAITING_SNAPSHOT, TableStanding.STOPPED)


def judge_table(
    *,
    on_source: bool | None,
    left_at: str | None = None,
    snapshot_stream_start: GtidSet | None = None,
    lake_holds_it: bool = False,
    stopped: bool = False,
) -> TableStanding:
    """Where a configured table stands (module doc).

    :param on_source: the source has the table; None when it was not asked (admission, in Spark).
    :param left_at: the GTID of the DDL at which the lake marks that the table left (None: no mark).
    :param snapshot_stream_start: where the table's latest snapshot streams from (None: none).
    :param lake_holds_it: the lake has the table's target table (what the prerequisites know).
    :param stopped: the lake marks the table stopped and no snapshot replaced it since
        (``Departure.holds_for``); ``left_at`` is then not given.
    """
    departed = left_at is not None and (
        snapshot_stream_start is None or Gtid.parse(left_at) not in snapshot_stream_start
    )
    if on_source is False:
        held = left_at is not None or lake_holds_it or stopped
        return TableStanding.GONE if held else TableStanding.NOT_FOUND
    if stopped:
        return TableStanding.STOPPED
    return TableStanding.AWAITING_SNAPSHOT if departed else TableStanding.PRESENT
