"""Two application processes on one pipeline: the second refuses to start while the first runs."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.apply_process import launch_application
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source
from tests.support.mysql import execute, scalar

pytestmark = pytest.mark.mysql


def test_second_instance_fails_with_a_clear_error_while_the_first_keeps_applying(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    execute(mysql_database, ConcurrentWriter.DDL)
    start = GtidSet.parse(scalar(mysql_database, "SELECT @@gtid_executed"))
    config = ApplyConfig(
        pipeline_id="fenced",
        lake_root=str(tmp_path / "lake"),
        tables=(f"{database}.orders",),
        start_gtids=start,
        mode="live",
        batch_max_seconds=0.2,
        heartbeat_s=0.5,
    )
    first = launch_application(config, tmp_path / "first", mysql_database)
    time.sleep(4)  # the first instance has claimed the pipeline and is tailing
    second = launch_application(config, tmp_path / "second", mysql_database)
    _, second_stderr = second.communicate(timeout=60)
    assert second.returncode == ExitCode.FENCED
    assert "a second instance must not write it at the same time" in second_stderr.decode()
    ConcurrentWriter(mysql_database, seconds=1).run()
    time.sleep(3)  # let the first instance apply everything
    first.send_signal(signal.SIGTERM)
    _, first_stderr = first.communicate(timeout=60)
    assert first.returncode == 0, first_stderr.decode()[-2000:]
    result = json.loads((tmp_path / "first" / "result.json").read_text())
    assert result["sink_epoch"] == 1 and result["transactions"] > 0
    assert_lake_equals_source(mysql_database, tmp_path / "lake", database, "orders")
