"""The example DAG's configuration file: defaults, overrides, and clear errors."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from airflow_mysql_cdc.pipeline.config import PipelineConfig, PipelineConfigError, load_pipeline_config
from airflow_mysql_cdc.pipeline.dag import build_pipeline_dag


def test_without_a_file_the_embedded_defaults_run_the_demo(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG", raising=False)
    config = load_pipeline_config(tmp_path / "absent.json")
    assert config == PipelineConfig()
    assert config.tables == ("demo_shop.customers", "demo_shop.orders")


def test_a_file_named_by_the_environment_overrides_the_defaults(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"tables": "a.x, b.y", "schedule": "every 30s", "on_purged": "resnapshot"}))
    monkeypatch.setenv("AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG", str(path))
    config = load_pipeline_config()
    assert config.tables == ("a.x", "b.y")
    assert config.schedule_value() == datetime.timedelta(seconds=30)
    assert config.on_purged == "resnapshot"
    assert config.statement_changes == "stop"  # the default: a statement-logged change stops the run


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"tabels": ["a.b"]}, "unknown pipeline configuration keys: tabels"),
        ({"password": "x"}, "credentials belong in the Airflow connections it names"),
        ({"on_purged": "ignore"}, "on_purged must be 'fail' or 'resnapshot'"),
        (
            {"tables": ["a.b"], "lake_root": "/l", "schema_changes": "ignore"},
            "pipeline configuration: schema_changes must be one of evolve, stop, not 'ignore'",
        ),
        (
            {"tables": ["a.b"], "lake_root": "/l", "statement_changes": "skip"},
            "pipeline configuration: statement_changes must be one of stop, resnapshot, not 'skip'",
        ),
        ([1, 2], "must hold a JSON object"),
    ],
)
def test_a_wrong_file_is_refused_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: object, message: str
) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(content))
    monkeypatch.setenv("AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG", str(path))
    with pytest.raises(PipelineConfigError, match=message) as refused:
        load_pipeline_config()
    assert f"the pipeline configuration {path}" in str(refused.value)  # the file to edit


def test_a_missing_file_named_by_the_environment_is_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG", str(tmp_path / "nope.json"))
    with pytest.raises(PipelineConfigError, match="cannot read the pipeline configuration"):
        load_pipeline_config()


@pytest.mark.parametrize(
    ("schedule", "interval"),
    [
        ("every 30s", datetime.timedelta(seconds=30)),
        ("@hourly", datetime.timedelta(hours=1)),
        ("@daily", datetime.timedelta(days=1)),
        ("*/10 * * * *", datetime.timedelta(minutes=10)),
        ("0 2,14 * * *", datetime.timedelta(hours=12)),
    ],
)
def test_the_schedule_interval_behind_the_backlog_catch_up(
    schedule: str, interval: datetime.timedelta
) -> None:
    assert PipelineConfig(schedule=schedule).interval() == interval


def test_a_stale_position_is_two_intervals_by_default_a_stated_time_or_never() -> None:
    assert PipelineConfig(schedule="@daily").stale_after() == datetime.timedelta(days=2)
    assert PipelineConfig(schedule="@daily", stale_after_hours=6).stale_after() == datetime.timedelta(hours=6)
    assert PipelineConfig(schedule="@daily", stale_after_hours=0).stale_after() is None
    assert PipelineConfig(schedule="@once").stale_after() is None


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"retention_headroom_runs": 0},
            "retention_headroom_runs must be a whole number of at least 1, not 0",
        ),
        ({"binlog_retention_hours": 0}, "binlog_retention_hours must be more than 0 hours, not 0"),
        ({"stale_after_hours": -1}, "stale_after_hours must be 0 .never warn. or more, not -1"),
    ],
)
def test_wrong_headroom_settings_are_refused_with_the_reason(values: dict, message: str) -> None:
    with pytest.raises(PipelineConfigError, match=message):
        PipelineConfig.from_dict({"tables": ["a.b"], "lake_root": "/l", **values})


@pytest.mark.parametrize(
    ("sensor_mode", "default_deferrable", "arguments"),
    [
        (None, False, {"mode": "reschedule", "deferrable": False}),
        (None, True, {"deferrable": True}),
        ("poke", True, {"mode": "poke", "deferrable": False}),
        ("reschedule", True, {"mode": "reschedule", "deferrable": False}),
        ("deferrable", False, {"deferrable": True}),
    ],
)
def test_the_sensor_mode_follows_airflows_default_deferrable_unless_the_file_names_one(
    sensor_mode: str | None, default_deferrable: bool, arguments: dict
) -> None:
    assert PipelineConfig(sensor_mode=sensor_mode).sensor_arguments(default_deferrable) == arguments  # type: ignore[arg-type]


def test_the_dags_resumability_sensor_defers_when_airflow_defaults_to_deferrable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "true")
    deferring = build_pipeline_dag(PipelineConfig(dag_id="deferring")).get_task("resumability")
    poking = build_pipeline_dag(PipelineConfig(dag_id="poking", sensor_mode="poke")).get_task("resumability")
    assert (deferring.deferrable, poking.deferrable, poking.mode) == (True, False, "poke")
    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "false")
    rescheduling = build_pipeline_dag(PipelineConfig(dag_id="rescheduling")).get_task("resumability")
    assert (rescheduling.deferrable, rescheduling.mode) == (False, "reschedule")


def test_a_wrong_sensor_mode_is_refused_naming_the_modes() -> None:
    with pytest.raises(PipelineConfigError, match="sensor_mode must be one of poke, reschedule, deferrable"):
        PipelineConfig(sensor_mode="wait")  # type: ignore[arg-type]


def test_the_progress_interval_reaches_the_replicate_task_and_a_non_positive_one_is_refused() -> None:
    replicate = build_pipeline_dag(PipelineConfig(dag_id="chatty", progress_interval_s=5)).get_task(
        "replicate"
    )
    assert replicate.progress_interval_s == 5
    for wrong in (0, -1, "30", True):
        with pytest.raises(
            PipelineConfigError, match="progress_interval_s must be a number of seconds above 0"
        ):
            PipelineConfig.from_dict({"progress_interval_s": wrong})
