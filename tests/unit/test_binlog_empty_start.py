"""An empty start set must still stream every retained transaction (the library's empty-start trap)."""

from __future__ import annotations

from pymysqlreplication.gtid import GtidSet as LibraryGtidSet

from airflow_mysql_cdc.engine.binlog.stream import replication_position
from airflow_mysql_cdc.engine.values.gtid import GtidSet


def test_empty_start_is_sent_as_a_gtid_dump_of_zero_uuids():
    """mysql-replication treats a falsy auto_position as file positioning (the empty-start trap)."""
    position = replication_position(GtidSet())
    assert position and str(position) == ""
    encoded = LibraryGtidSet(position)
    assert encoded.gtids == [] and encoded.encoded() == b"\x00" * 8
    assert replication_position(GtidSet.parse("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")) == (
        "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"
    )
