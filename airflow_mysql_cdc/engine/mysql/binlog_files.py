"""The server's binlog files: which one a checkpoint needs, and when that one was last written.

Invariant: every value here is read from the server, never guessed, with one known inexactness:

- the file list is ``SHOW BINARY LOGS`` (oldest first, the active file last);
- a file's ``Previous_gtids`` is its second event, read with ``SHOW BINLOG EVENTS IN 'f' LIMIT 2``
  (the server reads only the file's first two events; cheap on a file of any size). Only the files
  from the newest down to the needed one are read, as the server itself does;
- a closed file's last write is the *next* file's creation time: the timestamp of that file's
  Format_description event, read over the binlog dump protocol from position 4 (one short dump
  connection: a fake Rotate, then the Format_description event, then we hang up). ``SHOW BINLOG
  EVENTS`` has no time column, and the file's modification time, which MySQL's purge compares, is
  not visible from SQL. Measured on MySQL 9.7: the next file's event time is the closed file's mtime
  truncated to the second. After a restart it is the restart time, later than the last write by the
  downtime (see :mod:`~airflow_mysql_cdc.engine.values.headroom`).

The dump connection sends a random server_id in the upper half of the range and a fresh replica
UUID, so it can neither evict nor be evicted by a replica or a pipeline reader (the server evicts
by UUID when one is sent; see :mod:`airflow_mysql_cdc.engine.binlog.stream`). It needs REPLICATION
SLAVE, which every pipeline account has. Guarded by ``tests/integration/test_binlog_headroom.py``.
"""

from __future__ import annotations

import datetime
import random
import uuid
from dataclasses import dataclass
from typing import Any

from airflow_mysql_cdc.engine.mysql.binlog_retention import read_binlog_retention
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.headroom import HeadroomReading, choose_needed_file

_MAX_SERVER_ID = 2**32 - 1
_EVENTS_BEFORE_FORMAT_DESCRIPTION = 3  # a fake Rotate comes first; never read further than this


@dataclass(frozen=True)
class BinlogFile:
    name: str
    size: int


def list_binlog_files(cursor: Any) -> list[BinlogFile]:
    """The server's binlog files, oldest first; the last one is the active file."""
    cursor.execute("SHOW BINARY LOGS")
    return [BinlogFile(str(row[0]), int(row[1])) for row in cursor.fetchall()]


def read_previous_gtids(cursor: Any, file_name: str) -> GtidSet:
    """The ``Previous_gtids`` set of one binlog file: every GTID logged before the file began."""
    cursor.execute("SHOW BINLOG EVENTS IN %s LIMIT 2", (file_name,))
    for row in cursor.fetchall():
        if str(row[2]) == "Previous_gtids":
            return GtidSet.parse(str(row[5] or "").replace("\n", ""))
    raise RuntimeError(f"binlog file {file_name} has no Previous_gtids event among its first two events")


def read_file_started_at(endpoint: MySqlEndpoint, file_name: str) -> datetime.datetime:
    """When ``file_name`` was created (its Format_description event's time, whole seconds, UTC)."""
    # Imported here: the DAG file imports the sensor that reaches this module, and parsing it must
    # not load the binlog library (tests/unit/airflow/pipeline/test_dag_parse.py).
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import FormatDescriptionEvent

    connection_settings = endpoint.connection_kwargs()
    connection_settings.pop("database", None)
    reader = BinLogStreamReader(
        connection_settings=connection_settings,
        server_id=random.randint(2**31, _MAX_SERVER_ID),
        log_file=file_name,
        log_pos=4,
        resume_stream=True,
        blocking=False,
        slave_uuid=str(uuid.uuid4()),
        enable_logging=False,
    )
    try:
        for number, event in enumerate(reader):
            if isinstance(event, FormatDescriptionEvent) and event.timestamp:
                return datetime.datetime.fromtimestamp(event.timestamp, datetime.UTC)
            if number >= _EVENTS_BEFORE_FORMAT_DESCRIPTION:
                break
    finally:
        reader.close()
    raise RuntimeError(f"the server sent no Format_description event for binlog file {file_name}")


def read_headroom(
    endpoint: MySqlEndpoint, checkpoint: GtidSet, *, retention_override_hours: float | None = None
) -> HeadroomReading | None:
    """What the headroom of ``checkpoint`` is computed from; None when no retained file can serve it
    (its history is purged: the resumability verdict says so)."""
    with endpoint.connect() as connection, connection.cursor() as cursor:
        retention = read_binlog_retention(cursor, override_hours=retention_override_hours)
        files = [file.name for file in list_binlog_files(cursor)]
        needed = choose_needed_file(files, lambda name: read_previous_gtids(cursor, name), checkpoint)
        # The server's clock: the purge compares file times with it, not with this worker's.
        cursor.execute("SELECT UNIX_TIMESTAMP(NOW(6))")
        read_at = datetime.datetime.fromtimestamp(float(cursor.fetchone()[0]), datetime.UTC)
    if needed is None:
        return None
    is_active = needed == files[-1]
    last_write = None if is_active else read_file_started_at(endpoint, files[files.index(needed) + 1])
    return HeadroomReading(retention, needed, is_active, last_write, read_at)
