"""What a run's transactions left in the lake: its changes per operation, read back from the changelog.

Invariant: the changes a run applied to a table are the changelog rows whose ``_cdc_gtid`` lies in
the run's transactions (its record's end set minus its start set), whichever process wrote them.
Counting them in the lake at publish time is what makes a record truthful after a ``kill -9`` of
the task process: the orphaned application finishes the segment, the retry applies nothing, and a
count taken from the retry's own application result said ``rows_applied: 0`` (issue 26). The
changelog is append-only and never rewritten by the pipeline's upkeep (compaction keeps every row),
so the count does not depend on which attempt wrote the rows, nor on commit history. The same rows
are counted per transaction: the replicate task's metrics and ``Summary:`` line count the run's
transactions from them, and which of them an earlier try of the run applied (issue 34: they counted
only what the publishing try's own application did, 344 of 4,405 transactions after a kill -9).

Pruning without commit history. The changelog is partitioned by ``_cdc_commit_date`` (the source's
commit date, not the write's). A scan keeps only the partitions that hold a data file written since
``written_since_ms``: the caller passes a time before any write of the run's transactions (its
predecessor record's publication, less a day for clocks that disagree), and every file that holds a
row of them was written then or later (an append writes a new file; a compaction rewrites files into
newer ones). The file list is the table's current snapshot (``get_add_actions``), which maintenance
keeps. Without a bound (a first record, or a predecessor from before records said when they were
published) every partition is read, once. ``tests/unit/test_run_changes.py`` guards both.

No Airflow here; Delta and Arrow are imported inside the functions (the worker imports this module
through ``runs/lake.py``, which the DAG file loads).
"""

from __future__ import annotations

import bisect
import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.lake.delta_layout import COMMIT_DATE_COLUMN, GTID_COLUMN, OP_COLUMN
from airflow_mysql_cdc.engine.values.gtid import GtidSet

if TYPE_CHECKING:
    import pyarrow as pa

OPERATIONS = ("insert", "update", "delete", "truncate")
"""The values of ``_cdc_op`` (docs/binlog-application.md, "The lake")."""


class ChangelogVersionGoneError(CdcError, LookupError):
    """A version of a changelog cannot be read any more (its log cleaned up, its files vacuumed)."""


@dataclass(frozen=True)
class RunChanges:
    """One table's changes of one run, as its changelog holds them."""

    by_op: dict[str, int]
    """Changes per ``_cdc_op``: insert, update, delete always; truncate only when there was one."""
    first_commit_date: str | None
    """The earliest ``_cdc_commit_date`` of those changes (ISO date; None: no change)."""
    last_commit_date: str | None
    rows_by_gtid: dict[str, int] = field(default_factory=dict)
    """The changes per transaction (``_cdc_gtid``): how many transactions changed the table, and which
    of them a given set holds (what an earlier try applied: :func:`changes_in`)."""

    @property
    def total(self) -> int:
        return sum(self.by_op.values())

    @property
    def transactions(self) -> int:
        """The transactions that changed the table (a transaction's rows counted once)."""
        return len(self.rows_by_gtid)

    def changes_in(self, transactions: GtidSet) -> dict[str, int]:
        """The changes per transaction of those transactions ``transactions`` holds."""
        return {gtid: self.rows_by_gtid[gtid] for gtid in gtids_in(list(self.rows_by_gtid), transactions)}


def table_version(location: str, storage_options: Mapping[str, str] | None) -> int | None:
    """The Delta table's current version (None: there is no table at ``location``)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(location, storage_options=_options(storage_options)).version()
    except TableNotFoundError:
        return None


def run_changes(
    changelog: str,
    transactions: GtidSet,
    storage_options: Mapping[str, str] | None,
    *,
    written_since_ms: int | None,
) -> RunChanges:
    """Per operation, the changes of ``transactions`` in the changelog at ``changelog`` (none: no table)."""
    rows = changelog_rows(
        changelog,
        transactions,
        storage_options,
        columns=(OP_COLUMN, COMMIT_DATE_COLUMN, GTID_COLUMN),
        partitions=None
        if written_since_ms is None
        else _partitions_written_since(changelog, storage_options, written_since_ms),
    )
    return summarise(rows)


def summarise(rows: pa.Table | None) -> RunChanges:
    """Counts per ``_cdc_op``, the commit-date range and, when ``rows`` have the ``_cdc_gtid`` column,
    the counts per transaction of changelog ``rows`` (None: no table)."""
    import pyarrow.compute as pc

    counts = {op: 0 for op in OPERATIONS[:3]}
    if rows is None or rows.num_rows == 0:
        return RunChanges(counts, None, None)
    for entry in rows.group_by(OP_COLUMN).aggregate([(OP_COLUMN, "count")]).to_pylist():
        counts[entry[OP_COLUMN]] = counts.get(entry[OP_COLUMN], 0) + entry[f"{OP_COLUMN}_count"]
    by_gtid: dict[str, int] = {}
    if GTID_COLUMN in rows.column_names:
        per_gtid = rows.group_by(GTID_COLUMN).aggregate([(GTID_COLUMN, "count")])
        by_gtid = dict(
            zip(per_gtid[GTID_COLUMN].to_pylist(), per_gtid[f"{GTID_COLUMN}_count"].to_pylist(), strict=True)
        )
    dates = pc.min_max(rows[COMMIT_DATE_COLUMN]).as_py()
    return RunChanges(counts, dates["min"].isoformat(), dates["max"].isoformat(), by_gtid)


def changelog_rows(
    changelog: str,
    transactions: GtidSet,
    storage_options: Mapping[str, str] | None,
    *,
    columns: Sequence[str] | None = None,
    partitions: Sequence[datetime.date] | None = None,
    version: int | None = None,
) -> pa.Table | None:
    """The changelog rows of ``transactions`` (``columns``: all), in the ``partitions`` given (None:
    all), of the table as of ``version`` (None: the current one); None when there is no table.

    Raises :class:`ChangelogVersionGoneError` when the table is there but ``version`` cannot be read
    any more (its log was cleaned up, or its files vacuumed).
    """
    from deltalake.exceptions import DeltaError

    if table_version(changelog, storage_options) is None:
        return None
    try:
        return _changelog_rows(changelog, transactions, storage_options, columns, partitions, version)
    except (DeltaError, OSError) as error:
        if version is None:
            raise
        raise ChangelogVersionGoneError(
            f"version {version} of {changelog} cannot be read any more ({error}): its log was cleaned up "
            "or its files vacuumed. The changelog is append-only: read it as of now for the same rows."
        ) from error


def _changelog_rows(
    changelog: str,
    transactions: GtidSet,
    storage_options: Mapping[str, str] | None,
    columns: Sequence[str] | None,
    partitions: Sequence[datetime.date] | None,
    version: int | None,
) -> pa.Table:
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    table = DeltaTable(changelog, version=version, storage_options=_options(storage_options))
    wanted = list(columns) if columns is not None else None
    if wanted is not None and GTID_COLUMN not in wanted:
        wanted.append(GTID_COLUMN)
    if partitions is not None and COMMIT_DATE_COLUMN in table.metadata().partition_columns:
        if not partitions or not transactions:
            return _empty(table, wanted)
        filters = [(COMMIT_DATE_COLUMN, "in", sorted({day.isoformat() for day in partitions}))]
        rows = table.to_pyarrow_table(columns=wanted, filters=filters)
    else:
        rows = table.to_pyarrow_table(columns=wanted)
    selected = gtids_in(rows[GTID_COLUMN].unique().to_pylist(), transactions)
    rows = rows.filter(pc.is_in(rows[GTID_COLUMN], value_set=_strings(selected)))
    return rows if columns is None or GTID_COLUMN in columns else rows.drop_columns([GTID_COLUMN])


def gtids_in(gtids: Sequence[str | None], transactions: GtidSet) -> list[str]:
    """Those of ``gtids`` (``_cdc_gtid`` texts: ``uuid:n`` or ``uuid:tag:n``) that ``transactions`` holds."""
    intervals = {
        (f"{uuid}:{tag}" if tag else uuid): ([low for low, _ in spans], [high for _, high in spans])
        for (uuid, tag), spans in transactions.intervals_by_source.items()
    }
    selected = []
    for text in gtids:
        if text is None:
            continue
        source, _, number_text = text.rpartition(":")
        spans = intervals.get(source.lower())
        if spans is None or not number_text.isdigit():
            continue
        lows, highs = spans
        number = int(number_text)
        at = bisect.bisect_right(lows, number) - 1
        if at >= 0 and number <= highs[at]:
            selected.append(text)
    return selected


def _partitions_written_since(
    changelog: str, storage_options: Mapping[str, str] | None, written_since_ms: int
) -> list[datetime.date] | None:
    """The commit-date partitions holding a data file written at or after ``written_since_ms``
    (None: the table is not partitioned by commit date, or absent: read it whole)."""
    import pyarrow as pa
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(changelog, storage_options=_options(storage_options))
    except TableNotFoundError:
        return None
    if COMMIT_DATE_COLUMN not in table.metadata().partition_columns:
        return None
    files = pa.table(table.get_add_actions(flatten=True))
    column = f"partition.{COMMIT_DATE_COLUMN}"
    return sorted(
        {
            file[column]
            for file in files.select(["modification_time", column]).to_pylist()
            if file["modification_time"] >= written_since_ms and file[column] is not None
        }
    )


def _empty(table: Any, columns: list[str] | None) -> pa.Table:
    import pyarrow as pa

    schema = pa.schema(table.schema().to_arrow())
    if columns is not None:
        schema = pa.schema([schema.field(name) for name in columns])
    return schema.empty_table()


def _strings(values: Sequence[str]) -> pa.Array:
    import pyarrow as pa

    return pa.array(values, pa.string())


def _options(storage_options: Mapping[str, str] | None) -> dict[str, str] | None:
    return dict(storage_options) if storage_options else None
