"""What a run applied, counted in the lake, and how much of it an earlier try of the run applied.

Invariant: the replicate task's ``mysql_cdc.apply.*`` counters, its XCom ``applied`` and its
``Summary:`` line count the run's changes (its record's end set minus its start set), whichever
try's application wrote them, because they are counted from the changes the record's per-table
facts were read from (:func:`.record_facts.run_facts`), not taken from the result of the
publishing try's own application.

The scar (issue 34): after a ``kill -9`` of the task process, the orphaned application applied
4,405 transactions and 6,891 row changes; the retry of that late (catch-up) run recomputed its
segment end, so its configuration differed, the orphan's finished result was not adopted
(docs/operations.md, "When the task process dies"), and the retry applied the rest: 344 transactions,
513 row changes. The record said 7,404 rows (its facts are read from the lake), the counters, the XCom
and the Summary line said 513.

What an earlier try applied is the part of the run's changes whose transactions the lake held
before this try's application started (``resumed_from - requested_start`` of its result), and, when
this try adopted the result of an earlier try's application, everything that application applied.

A transaction is counted when it changed rows of a table (a row in its changelog): a DDL that
changed no row, which the application itself counts, is not. Guarded by
``tests/unit/airflow/runs/test_run_counts.py`` and, against a real kill -9 under the scheduler,
``tests/integration/scheduler/test_pipeline_under_the_scheduler.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject

if TYPE_CHECKING:
    from airflow_mysql_cdc.engine.apply.config import ApplyResult
    from airflow_mysql_cdc.engine.lake.run_changes import RunChanges

EARLIER_TRIES_KEY = "by_earlier_tries"
"""The key of the XCom ``applied`` that says how much of the run earlier tries applied."""


@dataclass(frozen=True)
class RunCounts:
    """A run's changes, counted in the lake: per table and in all (a transaction changing two tables
    counts once), and the share earlier tries of the run applied."""

    transactions: int
    rows: int
    transactions_by_table: dict[str, int]
    rows_by_table: dict[str, int]
    earlier_transactions: int = 0
    earlier_rows: int = 0

    @property
    def by_earlier_tries(self) -> bool:
        return bool(self.earlier_transactions or self.earlier_rows)

    def to_json(self) -> dict[str, int]:
        """The XCom ``applied``'s :data:`EARLIER_TRIES_KEY` value."""
        return {"transactions": self.earlier_transactions, "row_changes": self.earlier_rows}


def count_run(changes: Mapping[str, RunChanges], earlier: GtidSet) -> RunCounts:
    """Count ``changes`` (per table, the run's changes read for its record), and those of them whose
    transaction ``earlier`` holds (applied by earlier tries)."""
    everyone: set[str] = set()
    earlier_gtids: set[str] = set()
    earlier_rows = 0
    for table_changes in changes.values():
        everyone.update(table_changes.rows_by_gtid)
        if earlier:
            held = table_changes.changes_in(earlier)
            earlier_gtids.update(held)
            earlier_rows += sum(held.values())
    return RunCounts(
        transactions=len(everyone),
        rows=sum(table_changes.total for table_changes in changes.values()),
        transactions_by_table={table: table_changes.transactions for table, table_changes in changes.items()},
        rows_by_table={table: table_changes.total for table, table_changes in changes.items()},
        earlier_transactions=len(earlier_gtids),
        earlier_rows=earlier_rows,
    )


def counts_of(applied: Mapping[str, Any]) -> RunCounts | None:
    """The counts :func:`counted_applied` put into an XCom ``applied`` (None: an ``applied`` of an
    application alone, or of a record from before they were counted)."""
    earlier = applied.get(EARLIER_TRIES_KEY)
    if earlier is None:
        return None
    rows_by_table = {str(table): int(rows) for table, rows in (applied.get("rows_by_table") or {}).items()}
    return RunCounts(
        transactions=int(applied.get("transactions") or 0),
        rows=sum(rows_by_table.values()),
        transactions_by_table={
            str(table): int(count) for table, count in (applied.get("transactions_by_table") or {}).items()
        },
        rows_by_table=rows_by_table,
        earlier_transactions=int(earlier.get("transactions") or 0),
        earlier_rows=int(earlier.get("row_changes") or 0),
    )


def earlier_tries(applied: ApplyResult) -> GtidSet:
    """What earlier tries applied of the run whose (first) application's result is ``applied``: the
    transactions the lake held beyond the run's start before that application started."""
    return applied.resumed_from - applied.requested_start


def counted_applied(applied: Mapping[str, Any], counts: RunCounts) -> JsonObject:
    """The XCom ``applied`` of a run: the application's result with the run's counts (every try's)
    in place of the application's own, and :data:`EARLIER_TRIES_KEY` saying what earlier tries did."""
    return {
        **applied,
        "transactions": counts.transactions,
        "transactions_by_table": dict(counts.transactions_by_table),
        "rows_by_table": dict(counts.rows_by_table),
        EARLIER_TRIES_KEY: counts.to_json(),
    }
