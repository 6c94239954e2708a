"""Acting on one table from a run's conf, end to end through the shipped DAG (dag.test with a conf).

Pause, resume and re-snapshot while writers write, each run's lake compared with a replica frozen at
the published end set (a paused table: at the set it was paused at); a bad conf refused before
anything runs; and a confirmed ``rebase_checkpoint`` moving the pipeline onto a rebuilt source.
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.airflow import task_states, xcom_value
from tests.support.frozen_replica import FrozenReplica
from tests.support.mysql import ServerPool, execute, scalar
from tests.support.pipeline import (
    ALL_TASKS,
    Pipeline,
    assert_exact,
    assert_exact_at,
    checkpoint,
    finish,
    now,
    seed,
    writers_running,
    writing,
)

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db"), pytest.mark.slow]


def _run_with_writers(pipeline: Pipeline, source: MySqlEndpoint, seed_number: int, conf: dict | None = None):
    """A run of the interval ending now while writers change both tables (before, during and after)."""
    with writers_running(source, seed_number, "orders", "payments", pause_s=0.01):
        time.sleep(1.0)
        dag_run = pipeline.run(now(), conf)
    assert task_states(dag_run) == dict.fromkeys(ALL_TASKS, "success"), task_states(dag_run)
    return dag_run


def _actions(record: dict) -> list[dict]:
    """The record's actions, each checked to name who triggered the run (``dag.test``: its own user)."""
    assert all(entry.pop("triggered_by") == "dag_test" for entry in record["actions"])
    return record["actions"]


def test_pause_resume_and_resnapshot_from_a_runs_conf_keep_every_table_exact(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    database = mysql_database.database
    orders, payments = f"{database}.orders", f"{database}.payments"
    seed(mysql_database, "orders", 120)
    seed(mysql_database, "payments", 80)
    pipeline = Pipeline(monkeypatch, tmp_path, mysql_database.with_database(None), [orders, payments])
    first = pipeline.run(now() + datetime.timedelta(seconds=2))
    assert task_states(first) == dict.fromkeys(ALL_TASKS, "success")
    e1 = checkpoint(first)
    assert_exact_at(frozen_replica, e1, pipeline.lake, database, "orders", "payments")

    # Pause payments: it stays as of the run's start (E1) while orders streams on to E2.
    e2 = checkpoint(_run_with_writers(pipeline, mysql_database, 1, {"pause": [payments]}))
    assert _actions(e2) == [{"action": "pause", "table": payments}]
    assert e2["tables"][payments]["paused_at"] == e1["end_gtids"]
    assert e2["tables"][payments]["rows_applied"] == 0
    assert_exact_at(frozen_replica, e1, pipeline.lake, database, "payments")
    assert_exact_at(frozen_replica, e2, pipeline.lake, database, "orders")

    # A later run without a conf leaves it paused (recorded again), and is not re-snapshotting it.
    third = _run_with_writers(pipeline, mysql_database, 3)
    e3 = checkpoint(third)
    assert _actions(e3) == [] and e3["tables"][payments]["paused_at"] == e1["end_gtids"]
    assert xcom_value(third, "replicate", "plan")["tables"] == []
    assert_exact_at(frozen_replica, e3, pipeline.lake, database, "orders")

    # Resume: payments is caught up from E1 and both tables are exact at the run's end set.
    resumed = _run_with_writers(pipeline, mysql_database, 5, {"resume": [payments]})
    e4 = checkpoint(resumed)
    assert _actions(e4) == [{"action": "resume", "table": payments}]
    assert "paused_at" not in e4["tables"][payments] and e4["tables"][payments]["rows_applied"] > 0
    assert xcom_value(resumed, "replicate", "plan")["tables"] == []  # caught up, not snapshotted
    assert_exact_at(frozen_replica, e4, pipeline.lake, database, "orders", "payments")

    # Re-snapshot orders whole: snapshotted again in the run, then joined; both exact at E5.
    resnapshotted = _run_with_writers(pipeline, mysql_database, 7, {"resnapshot": [orders]})
    e5 = checkpoint(resnapshotted)
    assert _actions(e5) == [{"action": "resnapshot", "table": orders}]
    assert [entry["table"] for entry in xcom_value(resnapshotted, "replicate", "snapshot")["tables"]] == [
        orders
    ]
    assert e5["tables"][orders]["snapshot_id"] != e4["tables"][orders]["snapshot_id"]
    assert_exact_at(frozen_replica, e5, pipeline.lake, database, "orders", "payments")

    # Someone wrote to the payments target (a row changed, one deleted, one added): re-loading a key
    # range of it sets every key there to its value at the lake's position before the run streams on.
    target = DeltaTable(str(LakeLayout(pipeline.lake).target(database, "payments")))
    target.update(predicate="id = 12", updates={"customer": "'tampered'"})
    target.delete("id = 15")
    rows = target.to_pyarrow_table()
    extra = rows.slice(0, 1)  # any row, under a key the source never had
    write_deltalake(
        target,
        extra.set_column(extra.schema.get_field_index("id"), "id", pa.array([100_035], pa.int32())),
        mode="append",
    )
    reload = {"table": payments, "key_from": [10], "key_to": [100_040]}
    reloaded = _run_with_writers(pipeline, mysql_database, 9, {"resnapshot": [reload]})
    e6 = checkpoint(reloaded)
    assert _actions(e6) == [{"action": "resnapshot", **reload}]
    (outcome,) = xcom_value(reloaded, "replicate", "reloads")
    assert outcome["status"] == "repaired", outcome
    assert_exact_at(frozen_replica, e6, pipeline.lake, database, "orders", "payments")

    # A conf with a typo, or naming a table the pipeline does not replicate, fails the run before
    # any Spark application or lake write, saying what to fix.
    position = pipeline.lake_position()
    for conf, expected in (
        ({"resnaphot": [orders]}, "keys this pipeline does not know: resnaphot"),
        ({"pause": [f"{database}.refunds"]}, f"{database}.refunds is not one of this pipeline's tables"),
    ):
        capfd.readouterr()
        refused = pipeline.run(now(), conf)
        assert task_states(refused)["load_checkpoint"] == "failed"
        assert task_states(refused)["replicate"] != "success"
        output = capfd.readouterr()
        assert expected in output.out + output.err
    assert pipeline.lake_position() == position


def _copy_database(source: MySqlEndpoint, target: MySqlEndpoint, database: str, tables: list[str]) -> None:
    """What a restore from a backup gives: the same rows on a server with its own GTID history."""
    execute(target, f"CREATE DATABASE `{database}`")
    for table in tables:
        create = execute(source.with_database(database), f"SHOW CREATE TABLE `{table}`")[0][1]
        execute(target.with_database(database), create)
        rows = execute(source.with_database(database), f"SELECT * FROM `{table}`")
        with target.with_database(database).connect() as connection, connection.cursor() as cursor:
            marks = ", ".join(["%s"] * len(rows[0]))
            cursor.executemany(f"INSERT INTO `{table}` VALUES ({marks})", rows)
            connection.commit()


def test_a_confirmed_rebase_moves_the_pipeline_onto_a_rebuilt_source_and_an_unconfirmed_one_is_refused(
    mysql_servers: ServerPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    """The source is lost and rebuilt from a copy of its data: another server, another GTID history.
    The pipeline refuses it as another source; the operator vouches that the lake equals the rebuilt
    server at its gtid_executed and rebases onto it; streaming then goes on from there, exact."""
    original = mysql_servers.start(name="rebase_original").endpoint
    rebuilt = mysql_servers.start(name="rebase_rebuilt").endpoint
    # Receives everything the rebuilt server logs (the restore included), applied only up to a run's end set.
    rebuilt_replica = FrozenReplica.start(mysql_servers, rebuilt, name="rebase_rebuilt_replica")
    shop = "rebase_shop"
    execute(original, f"CREATE DATABASE {shop}")
    seed(original.with_database(shop), "orders", 90)
    seed(original.with_database(shop), "payments", 40)
    tables = [f"{shop}.orders", f"{shop}.payments"]
    pipeline = Pipeline(monkeypatch, tmp_path, original, tables)
    assert task_states(pipeline.run(now() + datetime.timedelta(seconds=2))) == dict.fromkeys(
        ALL_TASKS, "success"
    )
    finish(writing(original.with_database(shop), 1.5, 11, "orders", "payments"))
    caught_up = pipeline.run(now())
    assert task_states(caught_up) == dict.fromkeys(ALL_TASKS, "success")
    assert_exact(original, pipeline.lake, shop, "orders", "payments")

    _copy_database(original, rebuilt, shop, ["orders", "payments"])
    rebuilt_executed = str(GtidSet.parse(scalar(rebuilt, "SELECT @@GLOBAL.gtid_executed")))
    pipeline.point_at(rebuilt)

    capfd.readouterr()
    plain = pipeline.run(now())
    assert task_states(plain)["load_checkpoint"] == "failed"
    assert "the checkpoint comes from another source" in "".join(capfd.readouterr())
    unconfirmed = pipeline.run(now(), {"rebase_checkpoint": rebuilt_executed})
    assert task_states(unconfirmed)["load_checkpoint"] == "failed"
    assert 'add "confirm_rebase": true' in "".join(capfd.readouterr())

    with writers_running(rebuilt.with_database(shop), 21, "orders", "payments", pause_s=0.01):
        time.sleep(1.0)
        rebased = pipeline.run(now(), {"rebase_checkpoint": rebuilt_executed, "confirm_rebase": True})
    assert task_states(rebased) == dict.fromkeys(ALL_TASKS, "success"), task_states(rebased)
    record = checkpoint(rebased)
    assert _actions(record) == [
        {"action": "rebase_checkpoint", "gtid_set": rebuilt_executed, "confirmed": True}
    ]
    assert record["start_gtids"] == rebuilt_executed
    assert record["source"]["port"] == rebuilt.port
    rebased_end = GtidSet.parse(record["end_gtids"])
    assert GtidSet.parse(rebuilt_executed).issubset(rebased_end) and rebased_end != GtidSet.parse(
        rebuilt_executed
    )
    assert_exact_at(rebuilt_replica, record, pipeline.lake, shop, "orders", "payments")
    with writers_running(rebuilt.with_database(shop), 31, "orders", "payments", pause_s=0.01):
        time.sleep(1.0)
        after = pipeline.run(now())
    assert task_states(after) == dict.fromkeys(ALL_TASKS, "success")
    assert checkpoint(after)["start_gtids"] == record["end_gtids"]
    assert_exact_at(rebuilt_replica, checkpoint(after), pipeline.lake, shop, "orders", "payments")
