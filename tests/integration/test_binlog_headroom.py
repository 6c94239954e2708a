"""Binlog retention headroom on real MySQL 9.7 servers with a short ``binlog_expire_logs_seconds``.

The headroom is checked against what the server really does: the needed file's modification time on
disk, and the rotation that purges it once ``last write + retention`` has passed. Through real
Airflow (tests/dags/binlog_headroom.py), one checkpoint is judged against three schedules: every
minute (ok), every 400 s (below 3 intervals: a warning and a metric), every 1000 s (longer than the
retention: the run fails early with the statement that raises it).
"""

from __future__ import annotations

import datetime
import os
import time

import pytest

from airflow_mysql_cdc.engine.mysql.binlog_files import list_binlog_files, read_headroom
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.headroom import headroom_seconds
from airflow_mysql_cdc.engine.values.resumability import Verdict, assess_resumability
from tests.support.airflow import connection_env, run_dag, task_states, xcom_value
from tests.support.mysql import SandboxServer, ServerPool, create_user, execute, scalar
from tests.support.statsd import statsd_listener

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db")]
DAG_FILE, DAG_ID = "binlog_headroom.py", "test_binlog_headroom"


def _executed(endpoint: MySqlEndpoint) -> GtidSet:
    return GtidSet.parse(scalar(endpoint, "SELECT @@gtid_executed"))


def _files(endpoint: MySqlEndpoint) -> list[str]:
    with endpoint.connect() as connection, connection.cursor() as cursor:
        return [file.name for file in list_binlog_files(cursor)]


def _checkpoint_in_a_closed_file(server: SandboxServer) -> tuple[GtidSet, str]:
    """A checkpoint inside binlog file N, with N closed (rotated) and N+1 closed after more writes."""
    endpoint = server.endpoint
    execute(endpoint, "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY)")
    execute(endpoint, "FLUSH BINARY LOGS")
    needed = _files(endpoint)[-1]
    execute(endpoint, "INSERT INTO shop.t VALUES (1)")
    checkpoint = _executed(endpoint)
    execute(endpoint, "INSERT INTO shop.t VALUES (2)", "FLUSH BINARY LOGS")
    execute(endpoint, "INSERT INTO shop.t VALUES (3)", "FLUSH BINARY LOGS")
    return checkpoint, needed


def test_headroom_is_the_needed_files_last_write_plus_retention_and_the_server_purges_it_then(
    mysql_servers: ServerPool, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    server = mysql_servers.start(["--binlog-expire-logs-seconds=15"], name="headroom_expiry")
    checkpoint, needed = _checkpoint_in_a_closed_file(server)

    reading = read_headroom(server.endpoint, checkpoint)
    assert reading is not None and reading.needed_file == needed and not reading.needed_file_is_active
    assert reading.retention.seconds == 15 and reading.retention.source == "binlog_expire_logs_seconds"
    headroom = headroom_seconds(reading)
    assert headroom is not None
    # What MySQL's purge compares: the file's modification time. Ours is at most a second earlier.
    on_disk = os.stat(server.datadir / needed).st_mtime + 15 - reading.read_at.timestamp()
    assert on_disk - 1.5 <= headroom <= on_disk

    deadline = time.monotonic() + headroom
    time.sleep(max(0.0, deadline - 3 - time.monotonic()))
    execute(server.endpoint, "INSERT INTO shop.t VALUES (4)", "FLUSH BINARY LOGS")
    assert needed in _files(server.endpoint)  # 3 s before the headroom ends: still there
    time.sleep(max(0.0, deadline + 1.5 - time.monotonic()))
    execute(server.endpoint, "INSERT INTO shop.t VALUES (5)", "FLUSH BINARY LOGS")
    assert needed not in _files(server.endpoint)  # past it: the rotation purged it

    # The purged verdict still decides, through real Airflow: every sensor fails at once.
    purged = GtidSet.parse(scalar(server.endpoint, "SELECT @@gtid_purged"))
    assert (
        assess_resumability(checkpoint, purged, _executed(server.endpoint)).verdict is Verdict.BINLOG_PURGED
    )
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", connection_env(server.endpoint, server_id=5101))
    dag_run = run_dag(DAG_FILE, DAG_ID, {"checkpoint": str(checkpoint)})
    assert set(task_states(dag_run).values()) == {"failed"}
    log = "".join(capfd.readouterr())
    assert f"never applied: {purged - checkpoint}" in log


def test_the_sensor_logs_the_headroom_warns_below_the_missed_runs_and_fails_early_when_unsafe(
    mysql_servers: ServerPool, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    server = mysql_servers.start(["--binlog-expire-logs-seconds=900"], name="headroom_schedules")
    checkpoint, needed = _checkpoint_in_a_closed_file(server)
    execute(server.endpoint, "INSERT INTO shop.t VALUES (9)")  # the server moves on
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", connection_env(server.endpoint, server_id=5102))
    an_hour_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)

    with statsd_listener(monkeypatch) as statsd:
        dag_run = run_dag(
            DAG_FILE, DAG_ID, {"checkpoint": str(checkpoint), "segment_end": an_hour_ago.isoformat()}
        )

    assert task_states(dag_run) == {
        "every_minute": "success",
        "every_400s": "success",
        "every_1000s": "failed",
    }
    ok, low = xcom_value(dag_run, "every_minute"), xcom_value(dag_run, "every_400s")
    assert ok["verdict"] == "resumable" and ok["headroom"]["level"] == "ok"
    assert ok["headroom"]["needed_file"] == needed
    on_disk = os.stat(server.datadir / needed).st_mtime + 900 - time.time()
    assert on_disk - 30 <= ok["headroom"]["headroom_s"] <= on_disk + 1
    assert low["headroom"]["level"] == "low" and low["headroom"]["threshold_s"] == 1200
    assert low["headroom"]["to_change"] == "SET PERSIST binlog_expire_logs_seconds = 3600;"
    assert low["staleness"]["stale"] is True and low["staleness"]["waiting_transactions"] == 3

    log = "".join(capfd.readouterr())
    assert "binlog headroom 14 min" in log and f"its binlog file {needed} was last written" in log
    assert "That is less than 3 schedule intervals (20 min)" in log
    assert (
        "binlog retention 15 min (binlog_expire_logs_seconds) is shorter than the schedule's interval "
        "(16 min 40 s)" in log
    )
    assert (
        "SET PERSIST binlog_expire_logs_seconds = 7200; and run again before then. In Airflow: clear "
        "this task" in log
    )
    assert "stale position: the checkpoint covers data up to" in log
    # A plain StatsD server: the name without variables, and the pipeline appended (legacy names).
    headroom = "airflow.mysql_cdc.binlog.headroom_seconds"
    for name in (headroom, f"{headroom}.shop"):
        assert [float(value.removesuffix("|g")) > 800 for value in statsd.values(name)] == [True] * 3
    behind = statsd.values("airflow.mysql_cdc.checkpoint.behind_seconds.shop")
    assert [float(value.removesuffix("|g")) >= 3600 for value in behind] == [True] * 3
    assert sorted(statsd.values("airflow.mysql_cdc.binlog.headroom_low.shop")) == ["0|c", "1|c", "1|c"]
    assert statsd.values("airflow.mysql_cdc.checkpoint.stale.shop") == ["1|c"] * 3
    assert not [line for line in statsd.lines if line.startswith("airflow.mysql_cdc.shop.")]  # the old names


def test_rds_retention_null_read_through_its_procedure_fails_early_with_the_rds_statement(
    mysql_servers: ServerPool, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    """RDS as a CDC account sees it, emulated: ``mysql.rds_configuration`` it may not SELECT, and
    ``mysql.rds_show_configuration`` it may CALL; ``binlog retention hours`` NULL (RDS's default)."""
    server = mysql_servers.start(name="headroom_rds")
    execute(
        server.endpoint,
        "CREATE TABLE mysql.rds_configuration (name VARCHAR(100) PRIMARY KEY, value VARCHAR(100), "
        "description VARCHAR(300))",
        "INSERT INTO mysql.rds_configuration VALUES ('binlog retention hours', NULL, 'hours')",
        "CREATE PROCEDURE mysql.rds_show_configuration() "
        "SELECT name, value, description FROM mysql.rds_configuration",
    )
    checkpoint, _ = _checkpoint_in_a_closed_file(server)
    account = create_user(
        server.endpoint, "cdc_rds", "Rds-Secret-4kq", "REPLICATION SLAVE, REPLICATION CLIENT ON *.*",
        "EXECUTE ON PROCEDURE mysql.rds_show_configuration",
    )  # fmt: skip
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", connection_env(account, server_id=5103))

    dag_run = run_dag(DAG_FILE, DAG_ID, {"checkpoint": str(checkpoint)})

    assert set(task_states(dag_run).values()) == {"failed"}
    log = "".join(capfd.readouterr())
    assert (
        "binlog retention 0 s (binlog retention hours is NULL: RDS does not retain binlogs (0 h)) is shorter "
        "than the schedule's interval (1 min)" in log
    )
    assert "CALL mysql.rds_set_configuration('binlog retention hours', 1); and run again before then" in log

    execute(server.endpoint, "UPDATE mysql.rds_configuration SET value = '48'")
    dag_run = run_dag(DAG_FILE, DAG_ID, {"checkpoint": str(checkpoint)})
    assert task_states(dag_run)["every_1000s"] == "success"
    retention = xcom_value(dag_run, "every_1000s")["headroom"]["retention"]
    assert (retention["platform"], retention["seconds"]) == ("rds", 48 * 3600)
