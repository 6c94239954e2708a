"""The binlog application launched by its operator through spark-submit, inside a real DAG run."""

from __future__ import annotations

import datetime
import json
import threading
import time
from pathlib import Path

import psutil
import pytest

from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.storage import lake_table_exists
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from tests.support.airflow import connection_env, run_dag, task_states, xcom_value
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source, changelog_entries
from tests.support.mysql import create_user, execute, scalar
from tests.support.openlineage import completed_events, openlineage_listener_registered, openlineage_on
from tests.support.processes import binlog_driver_under, command_line, gone
from tests.support.statsd import statsd_listener

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db")]
SPARK_LOCAL = json.dumps({"conn_type": "spark", "host": "local[2]"})


def _executed(endpoint: MySqlEndpoint) -> GtidSet:
    return GtidSet.parse(scalar(endpoint, "SELECT @@gtid_executed"))


def test_operator_applies_a_segment_through_spark_submit_without_exposing_the_password(
    mysql_database: MySqlEndpoint,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    database = mysql_database.database
    execute(mysql_database, ConcurrentWriter.DDL)
    password = "Apply-Secret-77x"
    user = create_user(
        mysql_database,
        "cdc_apply",
        password,
        "REPLICATION SLAVE, REPLICATION CLIENT ON *.*",
        f"SELECT ON `{database}`.*",
    )
    start = _executed(mysql_database)
    ConcurrentWriter(mysql_database, seconds=1).run()
    segment_end = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=2)
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", connection_env(user, server_id=6101))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", SPARK_LOCAL)
    events_file = tmp_path / "openlineage.jsonl"
    lake_root = tmp_path / "lake"
    with (
        statsd_listener(monkeypatch) as statsd,
        openlineage_on(monkeypatch, {"type": "file", "log_file_path": str(events_file), "append": True}),
        openlineage_listener_registered(),
    ):
        dag_run = run_dag(
            "binlog_apply.py",
            "test_binlog_apply",
            {
                "tables": f"{database}.orders",
                "lake_root": str(lake_root),
                "start": str(start),
                "segment_end": segment_end.isoformat(),
            },
        )
        events = completed_events(events_file, "test_binlog_apply.apply")
    assert task_states(dag_run) == {"apply": "success"}
    result = xcom_value(dag_run, "apply")
    assert GtidSet.parse(result["end_gtids"]) >= start
    rows = result["rows_by_table"][f"{database}.orders"]
    assert rows > 0
    assert result["binlog_bytes_read"] > 0
    assert_lake_equals_source(mysql_database, lake_root, database, "orders")
    output = capfd.readouterr()
    log = output.out + output.err
    assert "Spark-Submit cmd" in log
    assert password not in log
    assert password not in json.dumps(result)
    # Metrics reached a StatsD server, with the tags in the name for a server without tags.
    legacy_rows = f"airflow.mysql_cdc.apply.rows.test.{database}__orders"
    assert statsd.values(legacy_rows) == [f"{rows}|c"]
    # The transactions that changed the table: the run's, as its changelog holds them (a new lake).
    transactions = len({gtid for gtid, _, _ in changelog_entries(lake_root, database, "orders")})
    assert result["transactions_by_table"][f"{database}.orders"] == transactions > 0
    legacy_transactions = f"airflow.mysql_cdc.apply.table_transactions.test.{database}__orders"
    assert statsd.values(legacy_transactions) == [f"{transactions}|c"]
    assert statsd.values("airflow.mysql_cdc.binlog.bytes_read.test") == [f"{result['binlog_bytes_read']}|c"]
    # The OpenLineage COMPLETE event names the MySQL table read and the Delta tables written.
    (event,) = events
    assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [
        (f"mysql://{mysql_database.host}:{mysql_database.port}", f"{database}.orders")
    ]
    outputs = {d["name"]: d for d in event["outputs"]}
    assert set(outputs) == {f"{lake_root}/{database}/orders", f"{lake_root}/_changelog/{database}/orders"}
    target = outputs[f"{lake_root}/{database}/orders"]
    assert target["namespace"] == "file"
    assert "id" in [field["name"] for field in target["facets"]["schema"]["fields"]]
    assert target["outputFacets"]["outputStatistics"]["rowCount"] == rows
    assert password not in events_file.read_text()


def _start_live_operator(
    endpoint: MySqlEndpoint, lake: Path, monkeypatch: pytest.MonkeyPatch, server_id: int
):
    """The operator in live mode in a thread; returns it, the thread, errors, and its Python driver."""
    database = endpoint.database
    execute(endpoint, ConcurrentWriter.DDL)
    monkeypatch.setenv(
        "AIRFLOW_CONN_CDC_SOURCE", connection_env(endpoint.with_database(None), server_id=server_id)
    )
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", SPARK_LOCAL)
    operator = MySqlCdcBinlogApplyOperator(
        task_id="apply_live",
        mysql_cdc_conn_id="cdc_source",
        spark_conn_id="spark_local",
        tables=f"{database}.orders",
        lake_root=str(lake),
        pipeline_id="live",
        start_gtids=str(_executed(endpoint)),
        mode="live",
    )
    failure: list[BaseException] = []

    def run() -> None:
        try:
            operator.execute({})
        except BaseException as error:  # noqa: BLE001 - the kill makes execute fail
            failure.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    driver = None
    deadline = time.monotonic() + 90
    while driver is None and time.monotonic() < deadline:
        time.sleep(0.5)
        pid = operator._hook.pid if operator._hook else None
        if pid is None:
            continue
        driver = binlog_driver_under(pid)
    assert driver is not None, "the Python driver never started"
    return operator, thread, failure, driver


def test_on_kill_stops_spark_submit_and_the_python_driver(
    mysql_database: MySqlEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator, thread, failure, driver = _start_live_operator(mysql_database, tmp_path, monkeypatch, 6102)
    spark_submit = psutil.Process(operator._hook.pid)
    assert operator._attempt is not None
    work_dir = operator._attempt.work_dir
    started = time.monotonic()
    operator.on_kill()
    # Airflow SIGKILLs the task process 5 s after the SIGTERM that ran on_kill ("mark failed"):
    # by then the application is stopped and the attempt's work dir gone, whatever execute still does.
    assert time.monotonic() - started < 5
    assert not work_dir.exists()
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert failure, "execute should fail once its application is killed"
    assert gone(driver) and gone(spark_submit)


def test_task_timeout_stops_the_whole_application(
    mysql_database: MySqlEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = mysql_database.database
    execute(mysql_database, ConcurrentWriter.DDL)
    monkeypatch.setenv(
        "AIRFLOW_CONN_CDC_SOURCE", connection_env(mysql_database.with_database(None), server_id=6104)
    )
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", SPARK_LOCAL)
    lake = tmp_path / "timeout-lake"
    started = time.time()
    dag_run = run_dag(
        "binlog_apply.py",
        "test_binlog_apply_timeout",
        {"tables": f"{database}.orders", "lake_root": str(lake), "start": str(_executed(mysql_database))},
    )
    assert task_states(dag_run) == {"apply_live": "failed"}
    leftovers = [
        p
        for p in psutil.process_iter()
        if "mysql-cdc-apply-timeout-" in command_line(p) and p.create_time() >= started and not gone(p)
    ]
    assert leftovers == []
    started_writing = lake_table_exists(LakeLayout(lake).state)
    assert started_writing, "the application should have started before the timeout"


def test_operator_catches_up_with_two_range_readers_to_the_same_lake(
    mysql_database: MySqlEndpoint,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    database = mysql_database.database
    execute(mysql_database, ConcurrentWriter.DDL)
    start = _executed(mysql_database)
    ConcurrentWriter(mysql_database, seconds=2).run()
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", connection_env(mysql_database.with_database(None)))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", SPARK_LOCAL)
    dag_run = run_dag(
        "binlog_apply.py",
        "test_binlog_apply_parallel",
        {"tables": f"{database}.orders", "lake_root": str(tmp_path), "start": str(start)},
    )
    assert task_states(dag_run) == {"apply": "success"}
    assert GtidSet.parse(xcom_value(dag_run, "apply")["end_gtids"]) >= _executed(mysql_database)
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")
    output = capfd.readouterr()
    assert "--catchup-parallelism 2" in output.out + output.err
    assert "parallel catch-up of" in output.out + output.err
