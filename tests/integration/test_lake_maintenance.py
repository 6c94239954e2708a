"""The built-in maintenance on real Delta tables: bounded files, unchanged rows, the lease, kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.lake.delta_sink import DeltaSink
from airflow_mysql_cdc.engine.lake.layout import OWN_TABLE_PROPERTIES
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy, MaintenancePolicyError
from airflow_mysql_cdc.engine.lake.maintenance.run import maintain_lake
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineBusyError
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from tests.unit.sink_fixtures import ITEMS, ORDERS, delete, insert, through, transaction, update

TABLES = ("shop.orders", "shop.items")


def _micro_batches(lake: Path, count: int, first: int = 1) -> DeltaSink:
    """``count`` one-transaction batches into two tables (live mode's shape: a commit per batch)."""
    sink = DeltaSink.at(lake, "p1", tables=TABLES)
    sink.open(through(first - 1))
    for number in range(first, first + count):
        key = number % 40
        changes = [insert(ORDERS, {"id": 1000 + number, "status": "new", "qty": number})]
        if number > 40:
            changes.append(
                update(
                    ORDERS,
                    {"id": 1000 + number - 40},
                    {"id": 1000 + number - 40, "status": "paid", "qty": key},
                )
            )
        if number % 7 == 0:  # a row no later update touches: each batch is a valid binlog (it checks itself)
            changes.append(delete(ORDERS, {"id": 1000 + number - 1, "status": "new", "qty": 0}))
        changes.append(insert(ITEMS, {"sku": f"s{number}", "price": number / 2}))
        sink.apply([transaction(number, *changes)], through(number))
    sink.release()
    return sink


def _rows(path: str, key: str) -> list[dict]:
    return sorted(DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda row: (row[key], str(row)))


def _data_files(path: str) -> int:
    return len(DeltaTable(path).file_uris())


def test_maintenance_bounds_files_and_log_after_many_micro_batches_without_changing_a_row(
    tmp_path: Path,
) -> None:
    sink = _micro_batches(tmp_path, 40)
    layout = sink.layout
    paths = {
        "target": layout.target("shop", "orders"),
        "changelog": layout.changelog("shop", "orders"),
        "state": layout.state,
    }
    before = {
        name: _rows(path, "id" if name != "state" else "epoch")
        for name, path in paths.items()
        if name != "state"
    }
    assert _data_files(paths["target"]) > 5 and _data_files(paths["changelog"]) > 30
    policy = MaintenancePolicy(small_files=4)

    report = maintain_lake(LakeState(tmp_path, "p1"), TABLES, policy, force=True)

    for name in ("target", "changelog"):
        assert _rows(paths[name], "id") == before[name]
    assert _data_files(paths["target"]) == 1  # sorted by id into files of up to 16 MiB
    assert _data_files(paths["changelog"]) == 1  # its day (2026-09-21) is closed: compacted
    assert _data_files(paths["state"]) == 1
    orders = next(table for table in report.tables if table.role == "target" and table.name == "shop.orders")
    assert orders.files_before > 5 and orders.files_after == 1
    assert any(action.startswith("rewritten sorted by id") for action in orders.actions)
    # A table this small holds far fewer than 200,000 rows a file anyway: the policy's 16 MiB stands
    # (tests/unit/test_maintenance_policy.py: narrow rows of big tables get smaller files).
    assert DeltaTable(paths["target"]).metadata().configuration["delta.targetFileSize"] == str(
        16 * 1024 * 1024
    )
    assert DeltaTable(paths["state"]).metadata().configuration | OWN_TABLE_PROPERTIES == (
        DeltaTable(paths["state"]).metadata().configuration
    )
    assert report.files_after < report.files_before
    # The pipeline goes on from where it was, on the maintained tables.
    _micro_batches(tmp_path, 5, first=41)
    assert (
        len(_rows(paths["changelog"], "id")) == len(before["changelog"]) + 11
    )  # 5 inserts, 5 updates, 1 delete


def test_maintenance_waits_out_its_interval_and_says_why(tmp_path: Path) -> None:
    _micro_batches(tmp_path, 3)
    lake = LakeState(tmp_path, "p1")
    first = maintain_lake(lake, TABLES, MaintenancePolicy(interval_hours=24))
    assert first.skipped is None and first.tables
    second = maintain_lake(lake, TABLES, MaintenancePolicy(interval_hours=24))
    assert second.skipped is not None and "the last maintenance finished 0.0 h ago" in second.skipped
    off = maintain_lake(lake, TABLES, MaintenancePolicy(enabled=False))
    assert off.skipped == "maintenance is off (maintenance.enabled: false)"


def test_maintenance_refuses_to_run_beside_an_application_holding_the_lease(tmp_path: Path) -> None:
    sink = DeltaSink.at(tmp_path, "p1", tables=TABLES, owner="other-host:1:app")
    sink.open(through(0))
    sink.apply([transaction(1, insert(ORDERS, {"id": 1, "status": "new", "qty": 1}))], through(1))
    with pytest.raises(PipelineBusyError, match="is being written by other-host:1:app"):
        maintain_lake(LakeState(tmp_path, "p1"), TABLES, MaintenancePolicy(), force=True)
    sink.apply([transaction(2, insert(ORDERS, {"id": 2, "status": "new", "qty": 2}))], through(2))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"interval": 3}, "unknown maintenance keys: interval (known: enabled, interval_hours"),
        ({"small_files": 1}, "maintenance.small_files must be at least 2, not 1"),
        ({"target_file_mb": 0}, "maintenance.target_file_mb must be between 1 and 4096, not 0"),
        ({"max_file_rows": 10}, "maintenance.max_file_rows must be at least 1000, not 10"),
        ({"vacuum_retention_hours": 0}, "readers in flight need the files they are reading"),
    ],
)
def test_a_wrong_maintenance_setting_is_refused_naming_the_key(settings: dict, message: str) -> None:
    with pytest.raises(MaintenancePolicyError) as refused:
        MaintenancePolicy.from_dict(settings)
    assert message in str(refused.value)


def test_a_killed_maintenance_leaves_the_lake_exact_and_its_retry_finishes(tmp_path: Path) -> None:
    sink = _micro_batches(tmp_path, 30)
    paths = [
        sink.layout.target("shop", "orders"),
        sink.layout.changelog("shop", "orders"),
        sink.layout.target("shop", "items"),
    ]
    before = [_rows(path, "id" if "orders" in path else "sku") for path in paths]
    config = tmp_path / "maintenance.json"
    config.write_text(
        json.dumps(
            {
                "pipeline_id": "p1",
                "lake_root": str(tmp_path),
                "tables": list(TABLES),
                "policy": {"small_files": 4},
                "force": True,
            }
        )
    )
    command = [
        sys.executable,
        "-m",
        "airflow_mysql_cdc.engine.entrypoints.maintain_lake",
        "--config",
        str(config),
        "--result-file",
        str(tmp_path / "result.json"),
    ]
    files_at_first = sum(len(DeltaTable(path).file_uris()) for path in paths)
    kills = 0
    for delay in (0.8, 1.3, 1.8):  # inside the import, the claim, a sort, a vacuum: wherever it is
        process = subprocess.Popen(
            command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(delay)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            kills += 1
        process.wait()
        assert [_rows(path, "id" if "orders" in path else "sku") for path in paths] == before
    assert kills >= 2
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    result = json.loads((tmp_path / "result.json").read_text())
    # A killed attempt may have finished a table's compaction already (a quiet machine got there in
    # 1.8 s): the lake has fewer files than before the first attempt, whichever attempt did it.
    assert result["skipped"] is None
    assert sum(len(DeltaTable(path).file_uris()) for path in paths) < files_at_first
    assert [_rows(path, "id" if "orders" in path else "sku") for path in paths] == before
    # The killed runs' dead owner on this host does not hold the pipeline back.
    _micro_batches(tmp_path, 3, first=31)
    assert pa.table(DeltaTable(paths[0]).to_pyarrow_table()).num_rows > 0
