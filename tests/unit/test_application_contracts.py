"""Each engine application has one typed configuration and one typed result, and one refusal of a
credential in any configuration (issue 35): what the operator writes is what the application reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyConfigError
from airflow_mysql_cdc.engine.entrypoints.snapshot_to_delta import SnapshotConfig
from airflow_mysql_cdc.engine.lake.maintenance.config import MaintenanceConfig, MaintenanceConfigError
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
from airflow_mysql_cdc.engine.lake.maintenance.report import MaintenanceReport, TableReport
from airflow_mysql_cdc.engine.lake.storage import StorageOptionsError
from airflow_mysql_cdc.engine.verify.config import VerifyConfig, VerifyConfigError
from airflow_mysql_cdc.engine.verify.settings import VerifySettings, VerifySettingsError, verify_mode
from airflow_mysql_cdc.pipeline.config import PipelineConfig, PipelineConfigError

BASE = {"pipeline_id": "shop", "lake_root": "/lake", "tables": ["shop.orders"]}


def _snapshot_from(data: dict[str, Any], tmp_path: Path) -> SnapshotConfig:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(data))
    return SnapshotConfig.from_file(path)


READERS: dict[str, tuple[Callable[[dict[str, Any], Path], object], type[Exception], str]] = {
    "binlog": (lambda data, _: ApplyConfig.from_dict(data), ApplyConfigError, "the binlog application's"),
    "snapshot": (
        lambda data, path: _snapshot_from({"lake_root": "/lake", "tables": ["shop.orders"]} | data, path),
        StorageOptionsError,
        "the snapshot application's",
    ),
    "verify": (
        lambda data, _: VerifyConfig.from_dict(BASE | data),
        VerifyConfigError,
        "the verify application's",
    ),
    "maintenance": (
        lambda data, _: MaintenanceConfig.from_dict(BASE | data),
        MaintenanceConfigError,
        "the maintenance application's",
    ),
    "pipeline": (lambda data, _: PipelineConfig.from_dict(data), PipelineConfigError, "the pipeline"),
}


@pytest.mark.parametrize("application", sorted(READERS))
@pytest.mark.parametrize("key", ["password", "user", "login", "host", "secret_storage_options"])
def test_every_configuration_refuses_a_credential_with_the_same_words(
    application: str, key: str, tmp_path: Path
) -> None:
    read, error, where = READERS[application]
    with pytest.raises(error) as refused:
        read({key: "s3cr3t"}, tmp_path)
    message = str(refused.value)
    assert message.startswith(f"{where}") and f"holds {key}:" in message
    assert (
        "credentials do not belong in a configuration, which is written to disk, printed and logged"
        in message
    )
    assert "s3cr3t" not in message


def test_the_verify_configuration_round_trips_with_typed_settings_and_no_secret() -> None:
    settings = VerifySettings(mode="full", key_from=(5,), key_to=(9,), repair=True)
    config = VerifyConfig(
        pipeline_id="shop", lake_root="s3://lake", tables=("shop.orders",), settings=settings,
        storage_options={"AWS_REGION": "eu-west-1"},
        secret_storage_options={"AWS_SECRET_ACCESS_KEY": "s3cr3t-key"},
    )  # fmt: skip
    written = json.loads(config.to_json())
    assert "secret_storage_options" not in written and "s3cr3t-key" not in config.to_json()
    again = VerifyConfig.from_dict(written)
    assert again == config and again.settings == settings and again.secret_storage_options == {}
    with pytest.raises(VerifySettingsError, match="unknown verify settings: colour"):
        VerifyConfig.from_dict(written | {"settings": {"colour": "red"}})
    with pytest.raises(VerifyConfigError, match="has unknown keys: colour"):
        VerifyConfig.from_dict(written | {"colour": "red"})


def test_the_maintenance_configuration_and_report_round_trip() -> None:
    config = MaintenanceConfig(
        pipeline_id="shop", lake_root="/lake", tables=("shop.orders",),
        policy=MaintenancePolicy.from_dict({"interval_hours": 6}), force=True,
    )  # fmt: skip
    assert MaintenanceConfig.from_dict(json.loads(config.to_json())) == config
    report = MaintenanceReport("shop", 17, tables=[TableReport("/lake/t", "target", "shop.orders", 9, 1)])
    assert MaintenanceReport.from_dict(report.to_dict()) == report


def test_a_verify_mode_is_typed_once_or_refused_naming_the_modes() -> None:
    assert verify_mode("sample") == "sample"
    with pytest.raises(VerifySettingsError, match="verify must be one of off, sample, full, not 'fast'"):
        verify_mode("fast")
