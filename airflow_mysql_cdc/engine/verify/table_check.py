"""One table's chunks compared with the lake at the position ``E``, leaving out what changed after ``E``.

Invariant (no false positive): a key is reported missing, extra or differing only when no
transaction of ``close - E`` touched it, where ``close`` is ``gtid_executed`` read at least
``settle_s`` after the last ``SELECT`` of its run of chunks; and then the source row read is the
key's row at ``E``. Why:

1. Each chunk's ``SELECT`` runs in a read view that saw every transaction of its low watermark
   ``L`` (:mod:`.source_chunks`), and ``E ⊆ L`` is checked (the server has executed the position;
   otherwise the run fails: wrong server, or a replica behind). Every transaction the view saw
   beyond ``E`` is in ``close - E``: it was either in ``gtid_executed`` when ``close`` was read, or
   had committed in InnoDB without its GTID in ``gtid_executed`` yet, which MySQL closes within the
   commit of its group (engine commit, then ``update_commit_group``), well inside ``settle_s``: the
   same margin :class:`~..binlog.stop_rules.UntilCommitTimestamp` relies on.
2. A key no transaction of ``close - E`` touched therefore has, in the view, exactly the value the
   transactions of ``E`` gave it: its value at ``E``. The lake's target holds the source at ``E``
   (the pipeline's state says so), so the two must be equal; a difference is the lake's.
3. Both sides of a chunk are reduced to the same keys (the left-out keys removed from both) and
   compared by :class:`~.comparable.ChunkChecksum` first; rows are diffed only where checksums differ.
4. A DDL that may change the table in ``close - E`` makes the table inconclusive, never a mismatch:
   the source's rows or columns may no longer be what the lake's columns describe.

Left-out keys are the cost: a key written continuously is never verified; the result says how
many were left out. Guarded by ``test_verify_with_writers_running_never_reports_a_difference``.
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
from airflow_mysql_cdc.engine.verify.changed_keys import BinlogFollower
from airflow_mysql_cdc.engine.verify.comparable import (
    ChunkChecksum,
    Key,
    RowDiff,
    delta_rows,
    diff_rows,
    key_tuples,
    without_keys,
)
from airflow_mysql_cdc.engine.verify.lake_rows import LakeRows
from airflow_mysql_cdc.engine.verify.report import ChunkReport
from airflow_mysql_cdc.engine.verify.source_chunks import gtid_executed, read_source_chunk

log = logging.getLogger("airflow_mysql_cdc.verify")
CHUNKS_PER_READ = 8
"""Chunks read before one closing watermark: more wait less on ``settle_s``, but leave out the keys
changed during a longer stretch."""


class SourceBehindError(LakeMismatchError, RuntimeError):
    """The source has not executed the pipeline's position: another server, or a replica behind."""


class SchemaChangedAfterPosition(CdcError):
    """A DDL after the position may have changed the table: the table is inconclusive (caught by
    :mod:`.run`, never an exit code of its own)."""

    def __init__(self, gtids: Sequence[object]) -> None:
        super().__init__(", ".join(str(gtid) for gtid in gtids))


@dataclass
class ChunkFinding:
    """One compared chunk: its report, and the diff where its checksums differ."""

    report: ChunkReport
    rows_compared: int
    diff: RowDiff | None
    chunk: Chunk


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

    def compare(
        self, chunks: Sequence[Chunk], progress: Callable[[int], None] = lambda done: None
    ) -> list[ChunkFinding]:
        """Every chunk compared (``chunks``: consecutive, in key order); raises
        :class:`SchemaChangedAfterPosition` when a DDL after the position touched the table."""
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
        changed_schema = self.follower.changed.schema_changes(self.table, close)
        if changed_schema:
            raise SchemaChangedAfterPosition(changed_schema)
        excluded = self.follower.changed.keys_changed(self.table, close)
        lake_by_chunk = self.lake_rows.by_chunk(chunks)
        return [
            self._compare_chunk(
                read.chunk, delta_rows(self.columns, read.rows), lake_by_chunk[read.chunk.index], excluded
            )
            for read in reads
        ]

    def _compare_chunk(
        self, chunk: Chunk, source: pa.Table, lake: pa.Table, excluded: set[Key]
    ) -> ChunkFinding:
        left_out = (
            excluded & (set(key_tuples(source, self.key)) | set(key_tuples(lake, self.key)))
            if excluded
            else set()
        )
        source, _ = without_keys(source, self.key, left_out)
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
        return ChunkFinding(report, source.num_rows, diff, chunk)
