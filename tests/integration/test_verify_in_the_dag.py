"""The shipped DAG's ``verify_lake`` task: clean with writers running, failing on a corrupted row
with the message a user reads, then repairing it when the pipeline JSON asks for it."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.support.airflow import task_states, xcom_value
from tests.support.lake import assert_lake_equals_source
from tests.support.mysql import execute
from tests.support.pipeline import ALL_TASKS, Pipeline, finish, now, seed, writing

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db"), pytest.mark.slow]


def test_the_verify_task_fails_naming_a_corrupted_row_and_repairs_it_when_asked(
    mysql_database: MySqlEndpoint,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    database = mysql_database.database
    seed(mysql_database, "orders", 200)
    values = ", ".join(f"({i}, 'c{i}', {i}.5, 'new', NULL, NOW(6))" for i in range(1001, 1031))
    execute(mysql_database, f"INSERT INTO orders VALUES {values}")  # keys the writers never touch
    table = f"{database}.orders"
    pipeline = Pipeline(monkeypatch, tmp_path, mysql_database, [table], verify="full", verify_max_examples=3)
    tasks = (*ALL_TASKS, "verify_lake")

    def run() -> object:
        writers = writing(mysql_database, 8, 81, "orders", pause_s=0.005)
        dag_run = pipeline.run(now() + datetime.timedelta(seconds=4))
        finish(writers)
        return dag_run

    clean = run()
    assert task_states(clean) == dict.fromkeys(tasks, "success")
    (result,) = xcom_value(clean, "verify_lake")["tables"]
    assert result["status"] == "clean" and result["rows_compared"] > 0

    DeltaTable(LakeLayout(pipeline.lake).target(database, "orders")).update(
        predicate="id = 1017", updates={"customer": "'tampered'"}
    )
    capfd.readouterr()
    failed = run()
    assert task_states(failed) == {**dict.fromkeys(ALL_TASKS, "success"), "verify_lake": "failed"}
    shown = capfd.readouterr()
    output = shown.out + shown.err
    assert "the lake differs from the source at the pipeline's position" in output
    assert (
        f"- {table}: 0 missing, 0 extra, 1 differing of" in output
        and "id=1017: differs in customer" in output
    )
    assert '"verify_repair": true' in output

    pipeline.configure(verify_repair=True)
    repaired = run()
    assert task_states(repaired) == dict.fromkeys(tasks, "success")
    (result,) = xcom_value(repaired, "verify_lake")["tables"]
    assert result["status"] == "repaired" and result["repair"]["outcome"] == "equal to the source"
    again = pipeline.run(now() + datetime.timedelta(seconds=2))  # writers stopped: the lake is the source now
    assert task_states(again) == dict.fromkeys(tasks, "success")
    assert xcom_value(again, "verify_lake")["tables"][0]["status"] == "clean"
    assert_lake_equals_source(mysql_database, pipeline.lake, database, "orders")
