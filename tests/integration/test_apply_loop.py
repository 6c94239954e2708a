"""The binlog application in-process: a concurrent writer, real MySQL, real Delta, exact result."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.integration.test_binlog_reader import gtid_executed
from tests.support.lake import (
    ConcurrentWriter,
    assert_lake_equals_source,
    binlog_entries,
    changelog_entries,
    orders_apply_config,
)
from tests.support.mysql import execute

pytestmark = pytest.mark.mysql


def test_segment_applied_while_a_writer_runs_equals_the_source(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    execute(mysql_database, ConcurrentWriter.DDL)
    start = gtid_executed(mysql_database)
    writer = ConcurrentWriter(mysql_database, seconds=3)
    segment_end_us = int((time.time() + 4.5) * 1_000_000)
    writer.start()
    result = run_apply(
        orders_apply_config(database, tmp_path, start, mode="segment", segment_end_us=segment_end_us),
        mysql_database,
    )
    writer.join()
    assert writer.error is None
    assert writer.transactions > 20
    assert result.batches > 1
    end = result.end_gtids
    assert end <= gtid_executed(mysql_database) and start <= end
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")
    assert changelog_entries(tmp_path, database, "orders") == binlog_entries(
        mysql_database, f"{database}.orders", start, end
    )


def test_rerunning_the_same_segment_applies_nothing(mysql_database: MySqlEndpoint, tmp_path: Path) -> None:
    database = mysql_database.database
    execute(mysql_database, ConcurrentWriter.DDL)
    start = gtid_executed(mysql_database)
    writer = ConcurrentWriter(mysql_database, seconds=1)
    writer.run()
    config = orders_apply_config(database, tmp_path, start, mode="until_caught_up")
    first = run_apply(config, mysql_database)
    again = run_apply(config, mysql_database)
    assert again.resumed_from == first.end_gtids == again.end_gtids
    assert again.transactions == 0 and again.batches == 0
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")


def test_segment_on_an_idle_server_ends_at_the_boundary(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    execute(mysql_database, ConcurrentWriter.DDL, "INSERT INTO orders VALUES (1, 'a', 1, 'new', NULL, NULL)")
    start = gtid_executed(mysql_database)
    boundary_us = int((time.time() + 1.5) * 1_000_000)
    started = time.monotonic()
    result = run_apply(
        orders_apply_config(database, tmp_path, start, mode="segment", segment_end_us=boundary_us),
        mysql_database,
    )
    assert time.monotonic() - started < 15
    assert time.time() * 1_000_000 >= boundary_us
    # Idle: nothing committed after the start, so the segment ends exactly where the server stands.
    assert result.transactions == 0 and result.batches == 0
    assert result.end_gtids == start == gtid_executed(mysql_database)
