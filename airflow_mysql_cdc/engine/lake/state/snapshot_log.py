"""The records of one table's snapshots, kept as rows that Delta maintenance never removes.

Invariant: a snapshot record (the plan and definition of a snapshot's start, or one finished chunk
with its watermarks) counts exactly when the target's Delta commit that carries its rows happened.
Each record is appended here *before* that commit, under a fresh random number, its *link*; the
commit carries the Delta app transaction ``(SNAPSHOT_APP_ID, link)``, and each record names the
link of the commit before it on its snapshot (``previous``). The target's app transaction
therefore names the newest committed record, and following ``previous`` from it visits exactly the
committed records of the latest snapshot back to its start: a record whose commit failed (a crash,
a conflict) is on no such path and is never read.

Why not the target's commit metadata, as before: Delta's log clean-up (any writer's checkpoint
with ``delta.logRetentionDuration``, 30 days by default) deletes old commits, and with them their
metadata; the snapshot was then unreadable and every later run failed. App transactions are kept in
every checkpoint, and these rows are data. Guarded by
``tests/integration/test_lake_state_durability.py``.

A row's ``record`` column holds the record's JSON (:mod:`.snapshot_records`, which types it); the
rest of the row says where it sits. Rows of older snapshots are no longer reachable; maintenance
deletes them (:func:`SnapshotLog.prune`).
Records moved from a lake written before this log existed (:mod:`.legacy`) are marked ``migrated``
and trusted while the target carries no snapshot app transaction yet.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import TableNotFoundError

from airflow_mysql_cdc.engine.errors import LakeMismatchError, NextStep
from airflow_mysql_cdc.engine.lake.layout import OWN_TABLE_PROPERTIES
from airflow_mysql_cdc.engine.lake.state.snapshot_records import (
    NoSnapshot,
    SnapshotRecord,
    SnapshotStart,
    record_from_json,
)

SNAPSHOT_APP_ID = "airflow_mysql_cdc:snapshot"
"""The app transaction of a target table's snapshot commits; its version is the newest record's link."""

_SCHEMA = pa.schema(
    [
        pa.field("snapshot_id", pa.string()),
        pa.field("link", pa.int64()),
        pa.field("previous", pa.int64()),
        pa.field("phase", pa.string()),
        pa.field("record", pa.string()),
        pa.field("written_at_us", pa.int64()),
        pa.field("migrated", pa.bool_()),
    ]
)


class SnapshotLogError(LakeMismatchError, RuntimeError):
    """The target names a snapshot record that its snapshot log does not hold."""


def new_link() -> int:
    """A link no other record of the table has (62 random bits: a clash is not a practical risk)."""
    return secrets.randbits(62) + 1


def snapshot_transaction(link: int) -> Transaction:
    return Transaction(SNAPSHOT_APP_ID, link)


@dataclass(frozen=True)
class SnapshotLogRow:
    """One row of the log: its record (a start, a chunk, or the mark of none) and where it sits."""

    link: int
    previous: int | None
    record: SnapshotRecord
    written_at_us: int
    migrated: bool = False

    @property
    def phase(self) -> str:
        return self.record.phase


class SnapshotLog:
    """``<lake>/_cdc/snapshots/<schema>/<table>``: the snapshot records of one target table."""

    def __init__(self, path: str, target_uri: str, storage_options: Mapping[str, str] | None = None) -> None:
        self.path = path
        self.target_uri = target_uri
        self.storage_options = dict(storage_options) if storage_options else None

    def rows(self) -> list[SnapshotLogRow]:
        try:
            table = DeltaTable(self.path, storage_options=self.storage_options)
        except TableNotFoundError:
            return []
        return [
            SnapshotLogRow(
                row["link"],
                row["previous"],
                record_from_json(json.loads(row["record"])),
                row["written_at_us"],
                row["migrated"],
            )
            for row in table.to_pyarrow_table().to_pylist()
        ]

    def committed(self, target_link: int | None) -> list[SnapshotRecord] | None:
        """The latest snapshot's committed records, newest first; [] when the table has none.

        ``target_link`` is the target's :data:`SNAPSHOT_APP_ID` transaction version (None: it has
        none). None is returned when nothing is known (no transaction, no migrated rows): a target
        written before this log existed, whose records are still in its commit history.
        """
        chain = self._chain(self.rows(), target_link)
        return None if chain is None else [row.record for row in chain]

    def _chain(self, rows: list[SnapshotLogRow], target_link: int | None) -> list[SnapshotLogRow] | None:
        if target_link is not None:
            by_link = {row.link: row for row in rows}
            head = by_link.get(target_link)
            if head is None:
                raise self._missing(target_link)
        else:
            migrated = [row for row in rows if row.migrated]
            if not migrated:
                return None
            head = max(migrated, key=lambda row: row.written_at_us)
            if isinstance(head.record, NoSnapshot):
                return []
            by_link = {row.link: row for row in migrated}
        chain = [head]
        while not isinstance(chain[-1].record, SnapshotStart):
            previous = chain[-1].previous
            if previous is None or previous not in by_link:
                raise self._missing(previous)
            chain.append(by_link[previous])
        return chain

    def head(self, target_link: int | None) -> int | None:
        """The link the next record continues: the target's, else the newest migrated row's."""
        if target_link is not None:
            return target_link
        migrated = [row for row in self.rows() if row.migrated and not isinstance(row.record, NoSnapshot)]
        return max(migrated, key=lambda row: row.written_at_us).link if migrated else None

    def intend(self, record: SnapshotRecord, previous: int | None) -> int:
        """Append ``record`` before its target commit; returns the link that commit must carry."""
        link = new_link()
        self._append([SnapshotLogRow(link, previous, record, time.time_ns() // 1000)])
        return link

    def intend_all(self, records: Sequence[SnapshotRecord], previous: int | None) -> int:
        """Append ``records`` (oldest first) in one write, each linked to the one before; returns the
        newest one's link, which the one target commit of all of them must carry."""
        now = time.time_ns() // 1000
        rows: list[SnapshotLogRow] = []
        for offset, record in enumerate(records):
            rows.append(SnapshotLogRow(new_link(), previous, record, now + offset))
            previous = rows[-1].link
        self._append(rows)
        return rows[-1].link

    def migrate(self, records_newest_first: list[SnapshotRecord]) -> None:
        """Store records read from a legacy commit history (or the mark that it held none)."""
        now = time.time_ns() // 1000
        oldest_first: list[SnapshotRecord] = list(reversed(records_newest_first)) or [NoSnapshot()]
        rows: list[SnapshotLogRow] = []
        previous: int | None = None
        for offset, record in enumerate(oldest_first):
            rows.append(SnapshotLogRow(new_link(), previous, record, now + offset, migrated=True))
            previous = rows[-1].link
        self._append(rows)

    def prune(self, target_link: int | None) -> int:
        """Delete the rows of snapshots older than the latest committed one; returns how many.

        Only rows written before the latest snapshot's start go: a snapshot starting meanwhile
        writes its rows later, so they stay whatever its commit's fate.
        """
        rows = self.rows()
        chain = self._chain(rows, target_link)
        if not chain:
            return 0
        start = chain[-1]
        stale = [row for row in rows if row.written_at_us < start.written_at_us]
        if not stale:
            return 0
        table = DeltaTable(self.path, storage_options=self.storage_options)
        metrics = table.delete(f"written_at_us < {start.written_at_us}")
        return int(metrics.get("num_deleted_rows", len(stale)))

    def _append(self, rows: list[SnapshotLogRow]) -> None:
        data = pa.table(
            {
                "snapshot_id": [row.record.snapshot_id for row in rows],
                "link": [row.link for row in rows],
                "previous": [row.previous for row in rows],
                "phase": [row.phase for row in rows],
                "record": [json.dumps(row.record.to_json(), sort_keys=True) for row in rows],
                "written_at_us": [row.written_at_us for row in rows],
                "migrated": [row.migrated for row in rows],
            },
            schema=_SCHEMA,
        )
        write_deltalake(
            self.path,
            data,
            mode="append",
            storage_options=self.storage_options,
            commit_properties=CommitProperties(max_commit_retries=10),
            configuration=OWN_TABLE_PROPERTIES,
        )

    def _missing(self, link: int | None) -> SnapshotLogError:
        return SnapshotLogError(
            f"{self.target_uri} names snapshot record {link} that {self.path} does not hold (the snapshot "
            "log was deleted or restored from another time). The table's rows cannot be tied to their "
            "watermarks any more: re-snapshot the table (its rows are replaced and tied to new records)."
        ).then(NextStep.resnapshot(".".join(self.path.rstrip("/").split("/")[-2:])))  # <schema>/<table>
