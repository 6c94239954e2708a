"""Prerequisites and GTID sensors inside a real DAG run (``dag.test()``) against real servers.

The test DAG (tests/dags/gtid_checks.py) runs the prerequisites operator, then three sensors in
the three modes: the resumability sensor in poke mode (on_purged='fail') and in deferrable mode
(on_purged='resnapshot', its trigger run inline by dag.test), and the GTID-reached sensor in
reschedule mode.
"""

from __future__ import annotations

import threading
import time

import pytest

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.airflow import connection_env, run_dag, task_states, xcom_value
from tests.support.mysql import ServerPool, create_user, execute, purge_all_binlogs, scalar

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db")]
DAG_FILE, DAG_ID = "gtid_checks.py", "test_gtid_checks"


def _gtid_executed(endpoint: MySqlEndpoint) -> GtidSet:
    return GtidSet.parse(scalar(endpoint, "SELECT @@gtid_executed"))


def _run(monkeypatch: pytest.MonkeyPatch, endpoint: MySqlEndpoint, **conf):
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", connection_env(endpoint, server_id=5001))
    return run_dag(DAG_FILE, DAG_ID, {"conn_id": "cdc_source", **conf})


def test_healthy_server_passes_prerequisites_and_every_sensor_without_logging_the_password(
    mysql_database: MySqlEndpoint, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    execute(mysql_database, "CREATE TABLE items (id INT PRIMARY KEY)", "INSERT INTO items VALUES (1)")
    password = "Very-Secret-9f3a"
    cdc_user = create_user(
        mysql_database,
        "cdc_reader",
        password,
        "REPLICATION SLAVE, REPLICATION CLIENT ON *.*",
        f"SELECT ON `{mysql_database.database}`.*",
    )
    checkpoint = str(_gtid_executed(mysql_database))
    dag_run = _run(
        monkeypatch,
        cdc_user,
        tables=f"{mysql_database.database}.items",
        checkpoint=checkpoint,
        target=checkpoint,
    )
    assert task_states(dag_run) == {
        "prerequisites": "success",
        "resumable": "success",
        "resumable_deferred": "success",
        "reached": "success",
    }
    report = xcom_value(dag_run, "prerequisites", "prerequisites_report")
    assert report["ok"] is True and report["error_count"] == 0
    assert xcom_value(dag_run, "resumable")["verdict"] == "resumable"
    assert xcom_value(dag_run, "reached")["missing"] == ""
    output = capfd.readouterr()
    assert "PASSED: 0 error(s), 0 warning(s)" in output.out + output.err
    assert password not in output.out + output.err
    assert password not in str(report)


def test_purged_binlogs_fail_at_once_or_record_the_resnapshot_decision(
    mysql_servers: ServerPool, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    server = mysql_servers.start(name="purged_binlogs")
    execute(server.endpoint, "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY)")
    checkpoint = _gtid_executed(server.endpoint)
    execute(server.endpoint, "INSERT INTO shop.t VALUES (1)", "INSERT INTO shop.t VALUES (2)")
    purge_all_binlogs(server.endpoint)
    lost = _gtid_executed(server.endpoint) - checkpoint

    started = time.monotonic()
    dag_run = _run(monkeypatch, server.endpoint, tables="shop.t", checkpoint=str(checkpoint), target="")
    states = task_states(dag_run)
    assert states["resumable"] == "failed"
    assert states["resumable_deferred"] == "success"
    decision = xcom_value(dag_run, "resumable_deferred")
    assert decision["resnapshot_needed"] is True
    assert decision["missing_from_binlog"] == str(lost)
    output = capfd.readouterr()
    assert f"never applied: {lost}" in output.out + output.err
    # Failing at once: the poke-mode sensor did not wait for its 5 s timeout.
    assert time.monotonic() - started < 60


def test_checkpoint_the_server_never_executed_waits_then_times_out_naming_it(
    mysql_database: MySqlEndpoint, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    server_uuid = scalar(mysql_database, "SELECT @@server_uuid")
    unknown = GtidSet.parse(f"{server_uuid}:900000000")
    checkpoint = _gtid_executed(mysql_database) | unknown
    dag_run = _run(
        monkeypatch, mysql_database.with_database(None), checkpoint=str(checkpoint), target=str(unknown)
    )
    assert task_states(dag_run) == {
        "prerequisites": "success",
        "resumable": "failed",
        "resumable_deferred": "failed",
        "reached": "failed",
    }
    output = capfd.readouterr()
    log = output.out + output.err
    assert "Sensor has timed out" in log
    assert f"the server lacks transactions the lake already applied: {unknown}" in log
    assert (
        f"timed out after 5.0s. Still: the server lacks transactions the lake already applied: {unknown}"
        in log
    )
    assert f"has not executed 1 GTID(s) of the target yet: {unknown}" in log


def test_gtid_reached_sensor_waits_for_a_replica_to_catch_up(
    mysql_servers: ServerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    primary = mysql_servers.start(name="catch_up_primary")
    replica = mysql_servers.start(name="catch_up_replica")
    execute(
        replica.endpoint,
        f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={primary.port}, "
        "SOURCE_USER='root', SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1",
        "START REPLICA IO_THREAD",
    )
    execute(primary.endpoint, "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY)")
    target = _gtid_executed(primary.endpoint)
    assert not target <= _gtid_executed(replica.endpoint)

    def start_applier_later() -> None:
        time.sleep(2)
        execute(replica.endpoint, "START REPLICA SQL_THREAD")

    applier = threading.Thread(target=start_applier_later)
    applier.start()
    dag_run = _run(monkeypatch, replica.endpoint, target=str(target), checkpoint="")
    applier.join()
    assert task_states(dag_run)["reached"] == "success"
    assert xcom_value(dag_run, "reached")["missing"] == ""


def test_a_wrong_password_fails_the_prerequisites_at_once_naming_the_connection_and_the_fix(
    mysql_database: MySqlEndpoint, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    """What a user saw: PyMySQL's raw ``(1045, "Access denied ...")`` with a traceback, retried twice.
    Now one message names the connection and what to change, and the task's two retries go unused."""
    create_user(mysql_database, "cdc_wrong_pw", "the-right-password", "REPLICATION CLIENT ON *.*")
    wrong = MySqlEndpoint(
        mysql_database.host, mysql_database.port, user="cdc_wrong_pw", password="Wrong-Password-7c1e"
    )
    capfd.readouterr()
    dag_run = _run(monkeypatch, wrong, tables=f"{mysql_database.database}.items")
    assert task_states(dag_run)["prerequisites"] == "failed"
    (prerequisites,) = [ti for ti in dag_run.get_task_instances() if ti.task_id == "prerequisites"]
    assert prerequisites.try_number == 1  # not retried, though the task has retries=2
    log = "".join(capfd.readouterr())
    assert (
        f"connection 'cdc_source' (mysql://cdc_wrong_pw@{mysql_database.host}:{mysql_database.port}/): "
        "MySQL refused the login (Access denied for user 'cdc_wrong_pw'@" in log
    )
    assert "Edit the connection (Admin > Connections in the UI" in log and "it is not retried" in log
    assert "Wrong-Password-7c1e" not in log and "the-right-password" not in log
    # Airflow's runner logs every failure with a traceback; of ours it shows only the operator's line
    # that re-raised the message, not the 5 frames through the hook, contextlib and PyMySQL below.
    failure = log[log.index("Task failed with exception") : log.index("SourceLoginError: connection")]
    frames = [line for line in failure.splitlines() if line.lstrip().startswith('File "')]
    ours = [line for line in frames if "airflow_mysql_cdc" in line or "contextlib" in line]
    assert len(ours) == 1 and "operators/prerequisites.py" in ours[0], frames
    assert "pymysql" not in failure and "During handling" not in failure
