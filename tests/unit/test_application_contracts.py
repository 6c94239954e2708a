"""Each engine application has one typed configuration and one typed result, and one refusal of a
credential in any configuration (issue 35): what the operator writes is what the application reads."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyConfigError
from airflow_mysql_cdc.engine.lake.maintenance.config import MaintenanceConfig, MaintenanceConfigError
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
from airflow_mysql_cdc.engine.lake.maintenance.report import MaintenanceReport, TableReport
from airflow_mysql_cdc.engine.snapshot.config import SnapshotConfig, SnapshotConfigError
from airflow_mysql_cdc.engine.snapshot.result import SnapshotResult, TableSnapshotResult
from airflow_mysql_cdc.engine.values.gtid import GtidSet
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
        SnapshotConfigError,
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


def test_the_snapshot_configuration_round_trips_and_refuses_what_it_does_not_know() -> None:
    config = SnapshotConfig(
        lake_root="s3://lake", tables=("shop.orders",), chunk_size=10, restart=True, base_server_id=7,
        storage_options={"AWS_REGION": "eu-west-1"}, secret_storage_options={"AWS_SECRET_ACCESS_KEY": "k"},
        executor_writes=False, progress_interval_s=5.0,
    )  # fmt: skip
    written = json.loads(config.to_json())
    assert "secret_storage_options" not in written
    assert SnapshotConfig.from_dict(written) == config
    with pytest.raises(SnapshotConfigError, match="has unknown keys: colour"):
        SnapshotConfig.from_dict(written | {"colour": "red"})
    with pytest.raises(SnapshotConfigError, match="tables is empty"):
        SnapshotConfig.from_dict(written | {"tables": []})


UUID_A, UUID_B = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "4e11fa47-71ca-11e1-9e33-c80aa9429562"
RESULT_FILE = {
    "tables": [
        {
            "table": "shop.orders", "snapshot_id": "s1", "resumed": True, "chunks_total": 5, "chunks_run": 2,
            "rows": 900, "stream_start": f"{UUID_A}:1-10", "consistent_point": f"{UUID_A}:1-12",
            "duration_s": 1.5, "restarts": 1,
        },
        {
            "table": "shop.payments", "snapshot_id": "s2", "resumed": False, "chunks_total": 1,
            "chunks_run": 1, "rows": 3, "stream_start": f"{UUID_A}:1-11,{UUID_B}:1-4",
            "consistent_point": f"{UUID_A}:1-11,{UUID_B}:1-4", "duration_s": 0.0, "restarts": 0,
        },
    ],
    "stream_start": f"{UUID_A}:1-10",
    "consistent_point": f"{UUID_A}:1-12,{UUID_B}:1-4",
    "bytes_to_driver": 2048,
    "driver_peak_rss_bytes": 1 << 30,
}  # fmt: skip


def test_the_snapshot_result_reads_and_writes_the_result_file_unchanged() -> None:
    """The result file is the XCom ``snapshot`` a replication run's segment reads: its JSON stays."""
    result = SnapshotResult.from_dict(RESULT_FILE)
    assert result.to_dict() == RESULT_FILE
    assert result.tables[0].stream_start == GtidSet.parse(f"{UUID_A}:1-10")
    assert result.tables[1].rows_per_second is None and result.tables[0].rows_per_second == 600.0
    in_process = {
        key: value
        for key, value in RESULT_FILE.items()
        if not key.endswith("_bytes") and key != "bytes_to_driver"
    }
    assert SnapshotResult.from_dict(in_process).to_dict() == in_process
    assert SnapshotResult().to_dict() == {"tables": [], "stream_start": "", "consistent_point": ""}


def test_a_snapshot_streams_from_the_low_watermarks_all_tables_share_and_is_exact_at_all_high_ones() -> None:
    tables = SnapshotResult.from_dict(RESULT_FILE).tables
    combined = SnapshotResult.of_tables(tables)
    assert combined.stream_start == GtidSet.parse(RESULT_FILE["stream_start"])
    assert combined.consistent_point == GtidSet.parse(RESULT_FILE["consistent_point"])
    assert TableSnapshotResult.from_dict(tables[0].to_dict()) == tables[0]


def test_the_snapshot_contract_loads_no_delta_arrow_or_spark() -> None:
    """The operator reads the result at task time; loading Delta or Spark for it would cost every task."""
    probe = (
        "import sys, airflow_mysql_cdc.engine.snapshot.config, airflow_mysql_cdc.engine.snapshot.result\n"
        "print(sorted(m for m in ('deltalake', 'pyarrow', 'pyspark') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"
