"""Server state reads work on the real server, whatever statement its version accepts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.mysql.server_state import read_server_state
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.mysql import REPO_ROOT, execute, scalar

pytestmark = pytest.mark.mysql


def test_server_state_reports_binlog_position_and_gtid_sets(mysql_database: MySqlEndpoint) -> None:
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    with mysql_database.connect() as connection:
        state = read_server_state(connection)
    assert state.flavor == "mysql"
    assert state.server_uuid == scalar(mysql_database, "SELECT @@server_uuid")
    assert state.binary_log is not None and state.binary_log.file.startswith("binlog.")
    assert state.binary_log.executed == state.gtid_executed
    assert state.gtid_executed.uuids == {state.server_uuid}
    assert state.gtid_purged <= state.gtid_executed


@pytest.mark.slow
def test_demo_replicates_the_sample_shop_and_the_checksums_match(
    mysql_server: MySqlEndpoint, tmp_path
) -> None:
    dsn = f"mysql://{mysql_server.user}:{mysql_server.password}@{mysql_server.host}:{mysql_server.port}/"
    result = subprocess.run(
        [
            sys.executable, str(REPO_ROOT / "scripts" / "demo.py"),
            "--dsn", dsn, "--runs", "2", "--interval-s", "10", "--workdir", str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "The lake equalled MySQL as of every run's published end GTID set." in result.stdout
    assert result.stdout.count("(the replica stopped there)") == 2
    assert result.stdout.count("binlog headroom") == 2  # the first run has nothing to resume from
    # Each run's verify task compared a sample of every table with live MySQL at its end set.
    assert result.stdout.count("verify (sample) against live MySQL at the run's end set:") == 2
    assert " mismatch " not in result.stdout and "clean (" in result.stdout
    end = GtidSet.parse(scalar(mysql_server, "SELECT @@gtid_executed"))
    assert f"end GTID set             {end}" in result.stdout
    if mysql_server.password:
        assert mysql_server.password not in result.stdout + result.stderr
