"""Connect a table's snapshot to the stream that follows it (:mod:`..snapshot.change_filter`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.snapshot.change_filter import SnapshotChangeFilter, TableChunkIndex
from airflow_mysql_cdc.engine.snapshot.key_order import KeyOrder, read_key_columns
from airflow_mysql_cdc.engine.snapshot.lake_commits import SnapshotProgress
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet

log = logging.getLogger("airflow_mysql_cdc.apply")


def load_snapshot_filter(
    endpoint: MySqlEndpoint,
    tables: Sequence[str],
    resume_from: GtidSet,
    snapshots: Mapping[str, SnapshotProgress | None],
) -> SnapshotChangeFilter | None:
    """The streaming filter for tables whose snapshot's watermarks the stream has not passed yet.

    A table whose latest snapshot is unfinished cannot be streamed: its rows are partial, and the
    filter would not know the missing chunks' watermarks. ``snapshots`` holds every table's progress
    as the pipeline's opening read it (:func:`.admission.read_snapshots`): read once per run.
    """
    indexes: dict[str, TableChunkIndex] = {}
    connection = None
    for name in tables:
        ref = TableRef.parse(name)
        progress = snapshots[str(ref)]
        if progress is None:
            continue
        progress.require_complete(ref)
        chunks = progress.snapshotted_chunks()
        if all(chunk.high_watermark.issubset(resume_from) for chunk in chunks):
            continue  # the stream is past every watermark: nothing to filter
        if connection is None:
            connection = endpoint.connect()
        with connection.cursor() as cursor:
            key_columns = read_key_columns(cursor, ref, progress.key)
        indexes[str(ref)] = TableChunkIndex(chunks, progress.key, KeyOrder(connection, key_columns))
        log.info("streaming %s through its snapshot filter (%d chunk watermarks)", ref, len(chunks))
    return SnapshotChangeFilter(indexes) if indexes else None
