"""One table's chunks compared with the lake at the position ``E``, while writes go on.

Invariant (no false positive): a key is reported missing, extra or differing only when the source's
row compared for it is its row at ``E``. Let ``close`` be ``gtid_executed`` read at least
``settle_s`` after the last ``SELECT`` of a run of chunks. Why the rows compared are those at ``E``:

1. Each chunk's ``SELECT`` runs in a read view that saw every transaction of its low watermark
   ``L`` (:mod:`.source_chunks`), and ``E ⊆ L`` is checked (the server has executed the position;
   otherwise the run fails: wrong server, or a replica behind). Every transaction the view saw
   beyond ``E`` is in ``close - E``: it was either in ``gtid_executed`` when ``close`` was read, or
   had committed in InnoDB without its GTID in ``gtid_executed`` yet, which MySQL closes within the
   commit of its group (engine commit, then ``update_commit_group``), well inside ``settle_s``: the
   same margin :class:`~..binlog.stop_rules.UntilCommitTimestamp` relies on.
2. The binlog is read up to ``close`` (:mod:`.changed_keys`). A key no transaction read there
   touched has, in the view, exactly the value the transactions of ``E`` gave it: its value at ``E``.
3. A key a transaction read there touched is compared with its row at ``E`` from the binlog: the
   before image of its first change after ``E``, or no row when that change created it
   (:mod:`.changed_keys`, the argument). The row the view read for it is dropped, whatever the view
   saw; a before image is placed in the chunk its key falls in, as lake rows are (:mod:`.lake_rows`).
4. A key whose first change after ``E`` came after a change the binlog does not describe (a DDL or a
   statement-logged change of the table read beyond the window) is *left out* on both sides when a
   transaction of ``close - E`` touched it; its chunk is checked again by a later verification
   (:mod:`.pending`). A DDL or a statement-logged change of the table within ``close - E`` makes the
   table inconclusive, never a mismatch: its rows or columns may no longer be what the lake's
   columns describe, or which rows it changed is unknown.
5. The lake's target holds the source at ``E`` (the pipeline's state says so), so both sides must be
   equal; both are reduced to the same keys and compared by :class:`~.comparable.ChunkChecksum`
   first, rows diffed only where checksums differ. A difference is the lake's.

Guarded by ``test_verify_with_writers_running_never_reports_a_difference`` (writers on every key:
no difference claimed, and no key left out) and, for the inconclusive cases,
``test_a_statement_logged_change_after_the_position_leaves_the_table_inconclusive``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pymysql

from airflow_mysql_cdc.engine.errors import CdcError, LakeMismatchError
from airflow_mysql_cdc.engine.mysql.schema import TableMetadata
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.key_codec import encode_key
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.verify.changed_keys import BinlogFollower, rows_table
from airflow_mysql_cdc.engine.verify.comparable import (
    ChunkChecksum,
    Key,
    RowDiff,
    delta_rows,
    diff_rows,
    key_tuples,
    without_keys,
)
from airflow_mysql_cdc.engine.verify.lake_rows import KeyedRows, LakeRows
from airflow_mysql_cdc.engine.verify.report import ChunkReport
from airflow_mysql_cdc.engine.verify.source_chunks import gtid_executed, read_source_chunk

log = logging.getLogger("airflow_mysql_cdc.verify")
CHUNKS_PER_READ = 8
"""Chunks read before one closing watermark: more wait less on ``settle_s``, but hold more of the
source's rows at once."""


class SourceBehindError(LakeMismatchError, RuntimeError):
    """The source has not executed the pipeline's position: another server, or a replica behind."""


class SchemaChangedAfterPosition(CdcError):
    """A DDL after the position may have changed the table: the table is inconclusive (caught by
    :mod:`.run`, never an exit code of its own)."""

    def __init__(self, gtids: Sequence[object]) -> None:
        super().__init__(", ".join(str(gtid) for gtid in gtids))
        self.gtids = tuple(str(gtid) for gtid in gtids)

    @property
    def reason(self) -> str:
        return (
            f"a DDL after the position may have changed it ({', '.join(self.gtids)}); the run that "
            "applies it evolves or re-snapshots the table, and a later verification compares it"
        )


class StatementChangedAfterPosition(SchemaChangedAfterPosition):
    """A statement-logged change after the position changed the table, rows unknown: inconclusive."""

    @property
    def reason(self) -> str:
        return (
            f"a statement-logged change after the position changed it ({', '.join(self.gtids)}) and the "
            "binlog does not say which rows; the run that applies it stops at it or re-snapshots the table "
            "(statement_changes), and a later verification compares it"
        )


@dataclass
class ChunkFinding:
    """One compared chunk: its report, and the diff where its checksums differ."""

    report: ChunkReport
    rows_compared: int
    diff: RowDiff | None
    chunk: Chunk
    from_binlog: int = 0
    """Rows compared at the position through a before image (keys changed after it)."""


class TableCheck:
    """Compares runs of one table's chunks, on the verification's connection and binlog follower."""

    def __init__(
        self,
        connection: pymysql.connections.Connection,
        metadata: TableMetadata,
        columns: Sequence[ColumnType],
        lake_rows: LakeRows,
        follower: BinlogFollower,
        position: GtidSet,
        *,
        settle_s: float,
        heartbeat: Callable[[], None] = lambda: None,
    ) -> None:
        self.connection = connection
        self.metadata = metadata
        self.table = str(metadata.ref)
        self.columns = tuple(columns)
        self.key = metadata.key_columns
        self.lake_rows = lake_rows
        self.follower = follower
        self.position = position
        self.settle_s = settle_s
        self.heartbeat = heartbeat
        self._replaced: set[Key] = set()
        """Keys changed after the position whose row there is known (the read's row is replaced)."""
        self._at_position: KeyedRows | None = None
        """Those rows that existed, placed by key: grown as the follower reads on."""
        self._recorded = 0

    def compare(
        self, chunks: Sequence[Chunk], progress: Callable[[int], None] = lambda done: None
    ) -> list[ChunkFinding]:
        """Every chunk compared (``chunks``: distinct indexes, in any order); raises
        :class:`SchemaChangedAfterPosition` when a DDL or a statement-logged change after the
        position touched the table."""
        findings: list[ChunkFinding] = []
        for start in range(0, len(chunks), CHUNKS_PER_READ):
            self.heartbeat()
            findings += self._compare_run(chunks[start : start + CHUNKS_PER_READ])
            progress(len(findings))
        return findings

    def _compare_run(self, chunks: Sequence[Chunk]) -> list[ChunkFinding]:
        reads = [
            read_source_chunk(self.connection, self.metadata.ref, self.columns, self.key,
                              self.metadata.row_key_columns, chunk)
            for chunk in chunks
        ]  # fmt: skip
        for read in reads:
            if not self.position.issubset(read.low_watermark):
                raise SourceBehindError(
                    f"the source has not executed the pipeline's position: it lacks "
                    f"{self.position - read.low_watermark}. The connection points at another server, or at a "
                    "replica that is behind; verify against the server the pipeline reads (or wait for the "
                    "replica)."
                )
        time.sleep(max(0.0, reads[-1].read_at + self.settle_s - time.monotonic()))
        close = gtid_executed(self.connection)
        self.follower.advance_to(close)
        changed = self.follower.changed
        if changed.schema_changes(self.table, close):
            raise SchemaChangedAfterPosition(changed.schema_changes(self.table, close))
        if changed.statement_changes(self.table, close):
            raise StatementChangedAfterPosition(changed.statement_changes(self.table, close))
        replaced, at_position = self._rows_at_position()
        left_out = changed.left_out(self.table, close)
        lake_by_chunk = self.lake_rows.by_chunk(chunks)
        before_by_chunk = at_position.by_chunk(chunks)
        return [
            self._compare_chunk(
                read.chunk,
                delta_rows(self.columns, read.rows),
                lake_by_chunk[read.chunk.index],
                replaced,
                before_by_chunk[read.chunk.index],
                left_out,
            )
            for read in reads
        ]

    def _rows_at_position(self) -> tuple[set[Key], KeyedRows]:
        """The keys changed after the position whose row there is known, and those rows (the ones
        that existed), placed by key; only the keys the follower met since the last call are added
        (a key's row at the position never changes once recorded)."""
        changed = self.follower.changed
        rows = changed.rows_at_position(self.table, since=self._recorded)
        self._recorded = changed.recorded(self.table)
        self._replaced |= rows.keys()
        existing = [row for row in rows.values() if row is not None]
        try:
            table = rows_table(self.columns, existing)
        except KeyError as missing:  # an image without a column the source has now: redefined
            raise SchemaChangedAfterPosition([f"a column {missing} the binlog's rows lack"]) from None
        if self._at_position is None:
            self._at_position = KeyedRows(table, self.key, self.lake_rows.order)
        else:
            self._at_position = self._at_position.extended(table)
        return self._replaced, self._at_position

    def _compare_chunk(
        self,
        chunk: Chunk,
        source: pa.Table,
        lake: pa.Table,
        replaced: set[Key],
        before: pa.Table,
        excluded: set[Key],
    ) -> ChunkFinding:
        left_out = (
            excluded & (set(key_tuples(source, self.key)) | set(key_tuples(lake, self.key)))
            if excluded
            else set()
        )
        source, _ = without_keys(source, self.key, left_out | replaced if left_out else replaced)
        if before.num_rows:
            source = pa.concat_tables([source, before.cast(source.schema)])
        lake, _ = without_keys(lake, self.key, left_out)
        source_sum, lake_sum = ChunkChecksum.of(source), ChunkChecksum.of(lake)
        report = ChunkReport(
            chunk.index,
            encode_key(chunk.lower),
            encode_key(chunk.upper),
            str(source_sum),
            str(lake_sum),
            len(left_out),
        )
        diff = None if source_sum == lake_sum else diff_rows(source, lake, self.key)
        return ChunkFinding(report, source.num_rows, diff, chunk, before.num_rows)
