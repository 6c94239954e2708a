"""The GTID sensors: what a user sees when one times out or cannot succeed, and their templates."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from typing import Any

import pytest
from airflow.sdk import DAG
from airflow.sdk.exceptions import AirflowFailException, AirflowSensorTimeout

from airflow_mysql_cdc.engine.errors import NextStep
from airflow_mysql_cdc.engine.values.headroom import HeadroomAssessment, HeadroomLevel, HeadroomPolicy
from airflow_mysql_cdc.hooks.next_steps import with_next_step
from airflow_mysql_cdc.sensors import gtid_sensors
from airflow_mysql_cdc.sensors.gtid_sensors import MySqlCdcResumabilitySensor, MySqlGtidReachedSensor
from tests.support.airflow_context import runtime_task_instance
from tests.support.stats_recorder import recording_stats
from tests.unit.airflow.fake_server import serve_gtid_state

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def _in_a_dag(sensor_class: type, **arguments: Any):
    with DAG("sensors", schedule="@daily", start_date=datetime.datetime(2026, 11, 1), params={"target": ""}):
        return sensor_class(task_id="sensor", mysql_cdc_conn_id="cdc_source", **arguments)


def _run(sensor) -> Any:
    ti = runtime_task_instance(sensor)
    return sensor.execute(ti.get_template_context())


def test_a_gtid_reached_sensor_that_times_out_names_the_gtids_still_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    serve_gtid_state(monkeypatch, executed=f"{UUID}:1-3")
    sensor = _in_a_dag(MySqlGtidReachedSensor, target=f"{UUID}:1-6", poke_interval=0.2, timeout=0.6)
    with pytest.raises(AirflowSensorTimeout) as timeout:
        _run(sensor)
    message = str(timeout.value)
    assert "Sensor has timed out" in message and "exceeds the specified timeout of 0.6" in message
    assert f"Still: the server has not executed 3 GTID(s) of the target yet: {UUID}:4-6" in message


def test_a_resumability_sensor_waiting_for_a_lagging_server_times_out_naming_what_it_lacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    serve_gtid_state(monkeypatch, executed=f"{UUID}:1-40")
    sensor = _in_a_dag(MySqlCdcResumabilitySensor, checkpoint=f"{UUID}:1-50", poke_interval=0.2, timeout=0.6)
    with pytest.raises(AirflowSensorTimeout) as timeout:
        _run(sensor)
    message = str(timeout.value)
    assert "Sensor has timed out" in message and "Still: " in message
    assert f"{UUID}:41-50" in message  # the transactions the server lacks


def test_a_deferred_sensor_that_times_out_in_the_triggerer_says_so_with_the_last_reading() -> None:
    sensor = _in_a_dag(MySqlGtidReachedSensor, target=f"{UUID}:1-6", deferrable=True, timeout=5)
    reading = f"the server has not executed 3 GTID(s) of the target yet: {UUID}:4-6"
    with pytest.raises(AirflowSensorTimeout) as timeout:
        sensor.execute_complete({}, {"state": "timeout", "message": reading, "payload": {}})
    assert str(timeout.value) == f"timed out after 5.0s. Still: {reading}"


def test_purged_binlogs_fail_at_once_without_waiting_for_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    serve_gtid_state(monkeypatch, executed=f"{UUID}:1-100", purged=f"{UUID}:1-60")
    sensor = _in_a_dag(MySqlCdcResumabilitySensor, checkpoint=f"{UUID}:1-50", poke_interval=30, timeout=3600)
    with pytest.raises(AirflowFailException, match=f"{UUID}:51-60"):
        _run(sensor)


def test_an_empty_checkpoint_passes_at_once_when_the_pipeline_starts_with_a_snapshot() -> None:
    sensor = _in_a_dag(MySqlCdcResumabilitySensor, checkpoint="", empty_checkpoint_passes=True)
    assert _run(sensor) == {"verdict": "first_run", "resumable": True, "resnapshot_needed": False}


@pytest.mark.parametrize(
    ("sensor_class", "field"),
    [(MySqlCdcResumabilitySensor, "checkpoint"), (MySqlGtidReachedSensor, "target")],
)
def test_the_gtid_set_and_the_connection_render_from_the_runs_params(sensor_class: type, field: str) -> None:
    with DAG(
        "sensors",
        schedule="@daily",
        start_date=datetime.datetime(2026, 11, 1),
        params={"set": "", "conn": ""},
    ):
        sensor = sensor_class(
            task_id="sensor", mysql_cdc_conn_id="{{ params.conn }}", **{field: "{{ params.set }}"}
        )
    extra = {"checkpoint_segment_end", "pipeline_id"} if sensor_class is MySqlCdcResumabilitySensor else set()
    assert set(sensor_class.template_fields) == {field, "mysql_cdc_conn_id"} | extra
    ti = runtime_task_instance(sensor, conf={"set": f"{UUID}:1-9", "conn": "replica"})
    ti.render_templates()
    assert (getattr(ti.task, field), ti.task.mysql_cdc_conn_id) == (f"{UUID}:1-9", "replica")


def _headroom(level: HeadroomLevel, headroom_s: float | None, message: str) -> HeadroomAssessment:
    return HeadroomAssessment(level, headroom_s, None, HeadroomPolicy(86400.0), message, "SET PERSIST ...;")


@pytest.mark.parametrize(
    ("level", "counted"),
    [(HeadroomLevel.OK, False), (HeadroomLevel.LOW, True)],
)
def test_a_resumable_checkpoint_reports_its_headroom_under_one_name_tagged_with_the_pipeline(
    monkeypatch: pytest.MonkeyPatch, level: HeadroomLevel, counted: bool
) -> None:
    """The names hold no pipeline id (docs/metrics.md); a plain StatsD server gets it appended."""
    serve_gtid_state(monkeypatch, executed=f"{UUID}:1-50")
    monkeypatch.setattr(
        gtid_sensors, "assess_headroom", lambda *a, **k: _headroom(level, 7200.0, "headroom 2 h")
    )
    sensor = _in_a_dag(MySqlCdcResumabilitySensor, checkpoint=f"{UUID}:1-50", pipeline_id="shop orders")
    with recording_stats() as metrics:
        result = _run(sensor)
    assert result["headroom"]["level"] == level.value and result["headroom"]["headroom_s"] == 7200
    assert result["staleness"]["stale"] is False
    pipeline = {"pipeline": "shop orders"}
    assert metrics.tagged() == {
        ("gauge", "mysql_cdc.binlog.headroom_seconds"): [(7200.0, pipeline)],
        ("incr", "mysql_cdc.binlog.headroom_low"): [(int(counted), pipeline)],
        ("incr", "mysql_cdc.checkpoint.stale"): [(0, pipeline)],
    }
    legacy = {name: value for _, name, value, tags in metrics.calls if tags is None}
    assert legacy == {
        "mysql_cdc.binlog.headroom_seconds.shop_orders": 7200.0,
        "mysql_cdc.binlog.headroom_low.shop_orders": int(counted),
        "mysql_cdc.checkpoint.stale.shop_orders": 0,
    }


def test_an_unsafe_headroom_fails_the_run_with_the_judged_message(monkeypatch: pytest.MonkeyPatch) -> None:
    serve_gtid_state(monkeypatch, executed=f"{UUID}:1-50")
    message = "binlog retention 12 h ... is shorter than the schedule's interval (1 d) ... SET PERSIST ...;"
    monkeypatch.setattr(
        gtid_sensors, "assess_headroom", lambda *a, **k: _headroom(HeadroomLevel.UNSAFE, 3600.0, message)
    )
    sensor = _in_a_dag(MySqlCdcResumabilitySensor, checkpoint=f"{UUID}:1-50")
    with pytest.raises(AirflowFailException) as failure:
        _run(sensor)
    assert str(failure.value) == with_next_step(message, NextStep.run_again())  # "clear this task"


def test_check_headroom_off_reads_nothing_beyond_the_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    serve_gtid_state(monkeypatch, executed=f"{UUID}:1-50")

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("no headroom read expected")

    monkeypatch.setattr(gtid_sensors, "assess_headroom", refuse)
    sensor = _in_a_dag(MySqlCdcResumabilitySensor, checkpoint=f"{UUID}:1-50", check_headroom=False)
    assert "headroom" not in _run(sensor)


def test_deferrable_defaults_to_airflows_operators_default_deferrable(tmp_path) -> None:
    """As in the first-party providers, the default is read when the module is imported (a worker's
    configuration), so it is checked in a fresh interpreter with the setting on."""
    assert _in_a_dag(MySqlGtidReachedSensor, target="").deferrable is False  # this suite's Airflow: unset
    probe = (
        "import datetime\n"
        "from airflow.sdk import DAG\n"
        "from airflow_mysql_cdc.sensors.gtid_sensors import (\n"
        "    MySqlCdcResumabilitySensor, MySqlGtidReachedSensor)\n"
        "with DAG('d', schedule=None, start_date=datetime.datetime(2026, 11, 1)):\n"
        "    print(MySqlGtidReachedSensor(task_id='r', target='').deferrable,\n"
        "          MySqlCdcResumabilitySensor(task_id='c', checkpoint='').deferrable,\n"
        "          MySqlGtidReachedSensor(task_id='p', target='', deferrable=False).deferrable)\n"
    )
    environment = {**os.environ, "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True"}
    shown = subprocess.run(
        [sys.executable, "-c", probe], env=environment, capture_output=True, text=True, check=True
    )
    assert shown.stdout.split() == ["True", "True", "False"]
