"""Every batch checks itself: the target MERGE's own counts must be what the batch's events imply.

Invariant: a target that equals its source at the batch's start position meets every key of the
batch exactly as the binlog says, so the MERGE's metrics (delta-rs returns them with every
``merge().execute()``) are known before it runs. A difference means the target was *not* the
source at that position (a row deleted or written behind the pipeline's back, a MERGE that missed
rows: issue 33's ``decimal(20,0)`` keys ≥ 2^63) and the table is wrong *now*: the sink stops that
table (:mod:`.delta_sink`), never the others, and the run says so. The check costs a second
aggregate in the group-by that finds the last row per key (:func:`.change_table.last_per_key`)
and a few counts over the keys: nothing the MERGE does not pay already.

**The rule.** For each key the batch touches, the binlog says whether the row existed just before
the batch, from the key's *first* event in the batch: an UPDATE or DELETE means it existed, an
INSERT that it did not. A primary-key-changing UPDATE is a delete of the old key (which therefore
existed) and an upsert of the new key, which did not exist just before (MySQL refuses a move onto a
taken key); each is judged as its own key. The key's *last* event says what the MERGE applies
(``upsert`` or ``delete``). With hard deletes (the default) the MERGE must then report exactly:

===================== ============ ============================================================
existed before        last action  the MERGE
===================== ============ ============================================================
yes                   upsert       updates it: ``num_target_rows_updated`` + 1
yes                   delete       deletes it: ``num_target_rows_deleted`` + 1
no                    upsert       inserts it: ``num_target_rows_inserted`` + 1
no                    delete       nothing (inserted and deleted within the batch)
===================== ============ ============================================================

so delete-then-insert of a key (first event DELETE, last upsert) is one update, insert-then-delete
is nothing, and a key moved away and back is judged by its first and last event alone.

**Soft deletes** (``soft_deletes: true``) keep a deleted key's row as a tombstone
(``_cdc_deleted = true``), and every key of the batch meets or makes exactly one row: an existing
key's row is updated (an upsert) or turned into a tombstone (a delete, an update too); a key that
did not exist before the batch meets the tombstone an earlier batch left (an update) or, without
one, is inserted, a last delete inserting its tombstone (:meth:`.table_writes.TargetMerge.execute`).
Which of the two is not known without reading the target, so that mode checks bounds: nothing
deleted; updated plus inserted exactly the batch's keys; updated at least the keys that existed;
inserted at most the keys that did not (or whose past is unknown). A row missing behind the
pipeline's back is then caught only where no tombstone can stand in for it; ``verify`` covers the rest.

**What the batch is.** The rule is applied to exactly the changes the MERGE applies, after every
step that removes changes, each of which keeps it true:

- *the snapshot filter* (:mod:`~airflow_mysql_cdc.engine.apply.snapshot_filter`) drops the changes a
  table's snapshot chunk already holds; the target then reflects the source as of the chunk's high
  watermark for those keys, and the first change left is the first the target has not seen, except
  a change the chunk's ``SELECT`` may have seen before its watermark named it (committed no later
  than the watermark's read, :mod:`~airflow_mysql_cdc.engine.snapshot.change_filter`): the filter
  marks it, and a key whose first change is marked has an *unknown* past;
- *a re-snapshot's join* (:mod:`~airflow_mysql_cdc.engine.apply.admission`) starts a table's stream
  where its snapshot (and catch-up) left it, the same case;
- *a catch-up wave* (:class:`~.change_waves.WaveTable`) folds many batches: the first event per key
  is the first over the whole wave (carried in the wave's last rows), the last is the last;
- *a crash replay* (``TableChanges.without(already_applied)``) leaves out the transactions the table
  already holds, which come first: a micro-batch finds each key's first event among the rest. A
  wave's last rows were folded before the replay was known, so a key whose first event in the wave
  was left out has an *unknown* past there: it counts as either, and the check becomes a bound;
- *an unsettled stretch*: a key-range re-load (a verification with repair while writes go on)
  leaves the keys changed after the lake's position to the stream, whose full row images set them
  whole; until the stream has passed ``gtid_executed`` as of the re-load (``ApplyConfig.unsettled``)
  every key of that table has an unknown past, so the check is a bound there too
  (:meth:`MergeExpectation.within`). It still catches a key matching two rows, or more deletes than
  the batch has.

Guarded by ``tests/unit/test_batch_check.py`` (the rule against a reference MERGE over random
workloads, both modes, waves and replays) and, on the real sink (delta-rs's own counts),
``tests/integration/test_batch_self_check.py``:
``test_a_row_deleted_behind_the_pipelines_back_stops_only_its_table`` (MySQL, the binlog application,
the message), ``test_soft_deletes_are_checked_by_bounds_against_real_tombstones``,
``test_a_stop_a_crash_interrupted_is_completed_by_the_next_open`` and
``test_a_re_loads_unsettled_stretch_is_checked_by_bounds_then_exactly_again``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_mysql_cdc.engine.lake.evolution import stopped_words
from airflow_mysql_cdc.engine.values.gtid import GtidSet


@dataclass(frozen=True)
class MergeExpectation:
    """The keys of one table's batch by whether they existed before it and what their last event does.

    ``unknown_*`` keys have a past the batch cannot tell (a replayed catch-up wave, see the module).
    """

    existed_upserts: int = 0
    existed_deletes: int = 0
    new_upserts: int = 0
    new_deletes: int = 0
    unknown_upserts: int = 0
    unknown_deletes: int = 0

    def within(self, gtids: GtidSet, unsettled: GtidSet | None) -> MergeExpectation:
        """This, or with every key's past unknown when the batch's ``gtids`` reach into a stretch a
        re-load left to the stream (``unsettled``, module doc)."""
        if unsettled is None or (gtids & unsettled).is_empty():
            return self
        return self.unknown_past()

    def unknown_past(self) -> MergeExpectation:
        """The same keys, none with a known past (a stretch a re-load left to the stream)."""
        return MergeExpectation(
            unknown_upserts=self.existed_upserts + self.new_upserts + self.unknown_upserts,
            unknown_deletes=self.existed_deletes + self.new_deletes + self.unknown_deletes,
        )

    @property
    def keys(self) -> int:
        return (
            self.existed_upserts
            + self.existed_deletes
            + self.new_upserts
            + self.new_deletes
            + self.unknown_upserts
            + self.unknown_deletes
        )


@dataclass(frozen=True)
class MergeCounts:
    """What a MERGE reports it did to the target's rows."""

    updated: int
    inserted: int
    deleted: int

    @classmethod
    def of(cls, metrics: Mapping[str, Any]) -> MergeCounts:
        return cls(
            int(metrics.get("num_target_rows_updated") or 0),
            int(metrics.get("num_target_rows_inserted") or 0),
            int(metrics.get("num_target_rows_deleted") or 0),
        )

    def describe(self) -> str:
        return f"{self.updated} updated, {self.inserted} inserted, {self.deleted} deleted"


@dataclass(frozen=True)
class Expected:
    """Each count's allowed range (low, high), and what the batch's events imply in words."""

    updated: tuple[int, int]
    inserted: tuple[int, int]
    deleted: tuple[int, int]
    touched: tuple[int, int]
    """updated + inserted."""

    def admits(self, counts: MergeCounts) -> bool:
        return all(
            low <= value <= high
            for value, (low, high) in (
                (counts.updated, self.updated),
                (counts.inserted, self.inserted),
                (counts.deleted, self.deleted),
                (counts.updated + counts.inserted, self.touched),
            )
        )

    def describe(self) -> str:
        parts = [
            f"{_range(self.updated)} updated",
            f"{_range(self.inserted)} inserted",
            f"{_range(self.deleted)} deleted",
        ]
        if self.touched != (self.updated[0] + self.inserted[0], self.updated[1] + self.inserted[1]):
            parts.append(f"{_range(self.touched)} updated or inserted")
        return ", ".join(parts)


def expected_counts(expectation: MergeExpectation, soft_deletes: bool) -> Expected:
    """The counts a MERGE of the batch may report on a target that equals the source (module doc)."""
    e = expectation
    if not soft_deletes:
        updated = (e.existed_upserts, e.existed_upserts + e.unknown_upserts)
        inserted = (e.new_upserts, e.new_upserts + e.unknown_upserts)
        deleted = (e.existed_deletes, e.existed_deletes + e.unknown_deletes)
        upserts = e.existed_upserts + e.new_upserts + e.unknown_upserts
        return Expected(updated, inserted, deleted, (upserts, upserts))
    existed = e.existed_upserts + e.existed_deletes
    not_known = e.new_upserts + e.unknown_upserts + e.new_deletes + e.unknown_deletes  # or a tombstone
    every_key = existed + not_known  # each meets or makes exactly one row
    return Expected((existed, every_key), (0, not_known), (0, 0), (every_key, every_key))


@dataclass(frozen=True)
class MergeDifference:
    """A batch's MERGE that did not do what the batch's events imply: the table is wrong."""

    table: str
    gtids: str
    """The GTIDs of the batch's changes to the table (first to last)."""
    expected: Expected
    actual: MergeCounts
    soft_deletes: bool

    def reason(self) -> str:
        """Why the table stopped, in the words its departure mark and ``status`` show."""
        mode = " (soft deletes: bounds)" if self.soft_deletes else ""
        return (
            f"the batch applying {self.gtids} implied {self.expected.describe()}{mode}, but its MERGE "
            f"into the target {self.actual.describe()}: the target did not hold the source's rows "
            "before this batch (a row written or deleted behind the pipeline's back, or a MERGE that "
            "missed rows), so its lake copy is wrong now"
        )

    def message(self) -> str:
        """What happened, what it means, what to do: the log line and the run's failure."""
        return stopped_words(self.table, self.reason())


def judge_merge(
    table: str,
    gtids: str,
    expectation: MergeExpectation,
    metrics: Mapping[str, Any],
    soft_deletes: bool,
) -> MergeDifference | None:
    """None when the MERGE's ``metrics`` are what the batch implies, else the difference."""
    expected = expected_counts(expectation, soft_deletes)
    actual = MergeCounts.of(metrics)
    if expected.admits(actual):
        return None
    return MergeDifference(table, gtids, expected, actual, soft_deletes)


def _range(bounds: tuple[int, int]) -> str:
    low, high = bounds
    return str(low) if low == high else f"{low} to {high}"
