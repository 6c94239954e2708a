"""``airflow-mysql-cdc status``: what it prints for a lake, and what it says for a wrong one.

The lake here is written with the engine's own writers (real Delta tables, no Spark); the daily DAG
test (tests/integration/test_pipeline_dag.py) runs the command on a lake its runs produced.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable

from airflow_mysql_cdc.engine.lake.checkpoint_log import CheckpointLog
from airflow_mysql_cdc.engine.lake.departures import Departure, mark_departed
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineStateStore
from airflow_mysql_cdc.engine.values.checkpoint import CheckpointRecord, SourceIdentity
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.runs.status import EXIT_NOT_FOUND, main

A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def _lake(root: Path) -> str:
    lake_root = str(root)
    store = PipelineStateStore(LakeLayout(lake_root).state, "shop")
    claimed = store.claim("host:1:abc", GtidSet.parse(f"{A}:1-5"))
    store.commit(claimed, GtidSet.parse(f"{A}:1-9"), 1, release=True, members={"db.orders": "snap-1"})
    CheckpointLog(lake_root, "shop").append(
        CheckpointRecord(
            pipeline_id="shop", lake_root=lake_root, source=SourceIdentity(A, "db1", 3306),
            start_gtids=f"{A}:1-5", end_gtids=f"{A}:1-9", segment_start="2026-01-01T00:00:00+00:00",
            segment_end="2026-01-02T00:00:00+00:00", run_id="scheduled__2026-01-01",
            tables={"db.orders": {"snapshot_id": "snap-1", "rows_applied": 4}},
        )
    )  # fmt: skip
    return lake_root


def test_status_prints_the_position_the_chain_and_each_tables_state(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    lake_root = _lake(tmp_path)
    assert main(["status", "--lake-root", lake_root, "--pipeline-id", "shop", "--table", "db.refunds"]) == 0
    out = capsys.readouterr().out
    assert f"position (applied GTID set): {A}:1-9" in out
    assert "writer: released, epoch 1" in out
    assert "Chain: 1 record(s), the last 1:" in out
    assert "2026-01-01T00:00:00+00:00 -> 2026-01-02T00:00:00+00:00  run scheduled__2026-01-01" in out
    assert "db.orders: rows_applied=4, snapshot_id=snap-1" in out
    assert "db.orders: member (joined with snapshot snap-1)" in out
    assert "db.refunds: not a member" in out
    assert "target: none" in out  # no target written here: the figures say so, nothing fails


def test_status_shows_a_stopped_table_with_why_and_the_way_out(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    lake_root = _lake(tmp_path)
    target = DeltaTable.create(
        LakeLayout(lake_root).target("db", "refunds"), schema=pa.schema([("id", pa.int64())])
    )
    reason = "its target was changed by another writer after the pipeline's last commit to it (version 3)"
    mark_departed(target, Departure("db.refunds", "", "stop", reason, ""), CommitProperties())
    assert main(["status", "--lake-root", lake_root, "--pipeline-id", "shop", "--table", "db.refunds"]) == 0
    out = capsys.readouterr().out
    assert (
        f"db.refunds: STOPPED, not streamed: db.refunds: {reason}. The pipeline stopped streaming it" in out
    )
    assert 'trigger the pipeline DAG with the conf {"resnapshot": ["db.refunds"]}' in out


def test_status_as_json_carries_the_records_and_tables(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import json

    lake_root = _lake(tmp_path)
    assert main(["status", "--lake-root", lake_root, "--pipeline-id", "shop", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["record_count"] == 1 and shown["records"][0]["end_gtids"] == f"{A}:1-9"
    assert [table["table"] for table in shown["tables"]] == ["db.orders"]


def test_status_of_a_path_without_a_pipeline_says_which_argument_to_check(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert (
        main(["status", "--lake-root", str(tmp_path / "nowhere"), "--pipeline-id", "shop"]) == EXIT_NOT_FOUND
    )
    error = capsys.readouterr().err
    assert f"no airflow-mysql-cdc pipeline in {tmp_path / 'nowhere'}" in error
    assert "Check --lake-root (the pipeline JSON's lake_root)" in error


def test_status_of_another_pipelines_lake_names_the_pipeline_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    lake_root = _lake(tmp_path)
    assert main(["status", "--lake-root", lake_root, "--pipeline-id", "books"]) == EXIT_NOT_FOUND
    error = capsys.readouterr().err
    assert "holds the state of pipeline 'shop', not 'books'" in error
    assert "Pass the pipeline id this lake belongs to (--pipeline-id" in error


def test_the_console_script_points_at_the_command() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[4] / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["airflow-mysql-cdc"] == "airflow_mysql_cdc.runs.status:main"
