"""Where a sampled verification of a table starts, and where the next one goes on.

Invariant: consecutive sampled runs check consecutive key ranges, so every key of a table is in a
checked range within a bounded number of runs, whatever the table's keys do meanwhile. A run checks
the chunks right after its cursor, an exclusive lower bound (None: the table's first key); the next
run's cursor is the last checked chunk's upper bound, or None (start over) when that chunk reached
the end of the key space. Chunks never overlap and leave no gap (:mod:`..snapshot.chunks`), so a
pass from None back to None covers the whole key space: ``ceil(rows / (sample_chunks * chunk_size))``
runs for a table of ``rows`` rows. Guarded by
``test_sampled_rotation_goes_on_where_the_last_run_stopped_and_wraps`` and
``test_sampled_verify_runs_cover_the_key_space_in_rotation``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.key_codec import decode_key, encode_key
from airflow_mysql_cdc.engine.values.json_values import JsonObject


@dataclass(frozen=True)
class SampleCursor:
    """Where a table's next sampled verification starts, and how many full passes it completed."""

    after: tuple[Any, ...] | None = None
    """Exclusive lower bound of the next run's first chunk; None: the table's first key."""
    passes: int = 0
    """Full passes over the key space completed so far."""

    def advanced(self, checked: Sequence[Chunk]) -> SampleCursor:
        """The cursor after a run checked ``checked`` (in key order, starting at this cursor)."""
        if not checked:
            return self
        last_upper = checked[-1].upper
        if last_upper is None:
            return SampleCursor(None, self.passes + 1)
        return SampleCursor(last_upper, self.passes)

    def to_json(self) -> JsonObject:
        return {"after": encode_key(self.after), "passes": self.passes}

    @classmethod
    def from_json(cls, data: JsonObject | None) -> SampleCursor:
        if not data:
            return cls()
        return cls(decode_key(data.get("after")), int(data.get("passes", 0)))
