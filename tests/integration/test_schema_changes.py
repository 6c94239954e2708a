"""Schema changes never stop the pipeline: each kind of DDL, with writers running, through the shipped DAG.

Every run below ends green (but the last, under ``schema_changes: stop``), and the lake equals the
source at the run's published end set, for every source column (a replica stopped at exactly that
set is the witness). The run's result and task log say what happened to each table
(``applied.schema_changes``). A DDL during a first run's snapshot: test_pipeline_dag_consistent_point.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.lake.departures import DEPARTURE_PROPERTY
from airflow_mysql_cdc.engine.lake.evolution_writes import DROPPED_COLUMNS_PROPERTY
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.airflow import task_states, xcom_value
from tests.support.frozen_replica import FrozenReplica
from tests.support.mysql import execute, scalar
from tests.support.pipeline import (
    ALL_TASKS,
    Pipeline,
    assert_exact_at,
    checkpoint,
    now,
    seed,
    writers_running,
)

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db"), pytest.mark.slow]


def _run(pipeline: Pipeline) -> Any:
    dag_run = pipeline.run(now())
    assert task_states(dag_run) == dict.fromkeys(ALL_TASKS, "success")
    return dag_run


def _running(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    endpoint: MySqlEndpoint,
    rows: dict[str, int],
    also: list[str] | None = None,
    **overrides: Any,
) -> Pipeline:
    """A pipeline of these seeded tables (name: rows) and the tables ``also`` already created, after
    its first run (their snapshots)."""
    for name, count in rows.items():
        seed(endpoint, name, count)
    tables = [f"{endpoint.database}.{name}" for name in (*rows, *(also or ()))]
    pipeline = Pipeline(monkeypatch, tmp_path, endpoint.with_database(None), tables, **overrides)
    _run(pipeline)
    return pipeline


def _actions(dag_run) -> dict[str, list[str]]:
    """Table name (without schema) -> the actions of this run's schema changes, in order."""
    actions: dict[str, list[str]] = {}
    for change in xcom_value(dag_run, "replicate", "applied")["schema_changes"]:
        actions.setdefault(change["table"].split(".", 1)[1], []).append(change["action"])
    return actions


def _target(pipeline: Pipeline, database: str, table: str) -> DeltaTable:
    return DeltaTable(str(LakeLayout(pipeline.lake).target(database, table)))


def test_added_and_dropped_columns_indexes_and_truncate_evolve_the_lake_in_place_and_stop_halts_at_a_ddl(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    """``items`` is a table of the user's own shape (a composite key, no seed columns): the values its
    existing rows got from each added column's default, of every type, reach the lake as a snapshot
    would store them."""
    database = mysql_database.database
    seed(mysql_database, "audit", 10)  # not tracked
    execute(
        mysql_database,
        "CREATE TABLE items (shop INT NOT NULL, sku VARCHAR(12) NOT NULL, qty INT, PRIMARY KEY (shop, sku))",
        "INSERT INTO items VALUES " + ", ".join(f"({i % 3}, 'sku{i}', {i})" for i in range(40)),
    )
    pipeline = _running(monkeypatch, tmp_path, mysql_database, {"orders": 200}, also=["items"])
    tables = ("orders", "items")
    with writers_running(mysql_database, 41, "orders", "audit", pause_s=0.01):
        # ADD with NULL, with a literal default (existing rows get it), FIRST and AFTER; an index;
        # DDL on an untracked table. (MySQL's implicit defaults: tests/unit/mysql/test_ddl.py.)
        execute(
            mysql_database,
            "ALTER TABLE orders ADD COLUMN memo VARCHAR(20) NULL",
            "ALTER TABLE orders ADD COLUMN qty INT NOT NULL DEFAULT 5 AFTER id, "
            "ADD COLUMN flag TINYINT NOT NULL DEFAULT 0 FIRST, ADD COLUMN price DECIMAL(8,3) DEFAULT '1.250'",
            "ALTER TABLE orders ADD INDEX by_customer (customer)",
            "ALTER TABLE audit ADD COLUMN z INT",
        )
        execute(
            mysql_database,
            "INSERT INTO items VALUES (7, 'before', 1)",
            "ALTER TABLE items ADD COLUMN kind ENUM('a', 'b''c') NOT NULL DEFAULT 'b''c' FIRST, "
            "ADD COLUMN tags SET('x', 'y') DEFAULT 'y,x', ADD COLUMN day DATE DEFAULT '2024-02-29', "
            "ADD COLUMN at DATETIME(3) DEFAULT '2024-01-01 10:11:12.345' AFTER sku, "
            "ADD COLUMN ratio FLOAT DEFAULT 0.1, ADD COLUMN price DECIMAL(10,4) DEFAULT -3.25, "
            "ADD COLUMN bits BIT(4) DEFAULT b'1010', ADD COLUMN doc JSON, ADD COLUMN raw BLOB, "
            "ADD COLUMN code VARBINARY(4) DEFAULT x'00ff', "
            "ADD COLUMN big BIGINT UNSIGNED NOT NULL DEFAULT 18446744073709551615, "
            "ADD COLUMN yr YEAR DEFAULT 1999, ADD COLUMN body TEXT NOT NULL, ADD COLUMN n SMALLINT NOT NULL",
            "INSERT INTO items (shop, sku, kind, body, n, doc, raw)"
            " VALUES (7, 'after', 'a', 'b', 3, '{\"k\": [1, 2.5]}', x'00')",
            "UPDATE items SET ratio = 2.5, tags = 'x' WHERE shop = 1 AND sku = 'sku1'",
            "DELETE FROM items WHERE shop = 2 AND sku = 'sku2'",
        )
        added = _run(pipeline)
        assert_exact_at(frozen_replica, checkpoint(added), pipeline.lake, database, *tables)
        assert _actions(added) == {"orders": ["evolve", "evolve", "unchanged"], "items": ["evolve"]}
        log = capfd.readouterr()
        assert f"{database}.orders evolved in place: added memo" in log.out + log.err  # the task log
        lake_columns = set(_target(pipeline, database, "orders").schema().to_arrow().names)
        assert {"memo", "qty", "flag", "price"} <= lake_columns

        # DROP: the lake keeps the column (NULL from here on) and records the drop.
        execute(mysql_database, "ALTER TABLE orders DROP COLUMN memo, DROP COLUMN price")
        dropped = _run(pipeline)
        assert_exact_at(frozen_replica, checkpoint(dropped), pipeline.lake, database, *tables)
        assert _actions(dropped) == {"orders": ["evolve"]}
        properties = _target(pipeline, database, "orders").metadata().configuration
        assert sorted(json.loads(properties[DROPPED_COLUMNS_PROPERTY])) == ["memo", "price"]

        # TRUNCATE: the lake table is emptied at its position; rows written after it arrive.
        execute(mysql_database, "TRUNCATE TABLE orders")
        truncated = _run(pipeline)
        assert_exact_at(frozen_replica, checkpoint(truncated), pipeline.lake, database, *tables)
        assert _actions(truncated) == {"orders": ["truncate"]}

    # With schema_changes "stop" the run fails before the next DDL, naming it and the setting to
    # change, having applied every transaction before it.
    pipeline.configure(schema_changes="stop")
    execute(mysql_database, "INSERT INTO orders (id, customer, amount, status) VALUES (900, 'c', 1, 'new')")
    before_the_ddl = GtidSet.parse(scalar(mysql_database, "SELECT @@gtid_executed"))
    execute(mysql_database, "ALTER TABLE orders ADD COLUMN score INT")
    capfd.readouterr()
    stopped = pipeline.run(now())
    assert task_states(stopped)["replicate"] == "failed"
    assert pipeline.lake_position() == before_the_ddl  # the insert and all before it, not the DDL
    log = capfd.readouterr()
    text = log.out + log.err
    assert "ADD COLUMN score" in text and "schema_changes setting is 'stop'" in text
    assert "Set schema_changes: evolve" in text


def test_changes_whose_effect_is_not_in_the_binlog_resnapshot_only_that_table_within_the_run(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    """In the same run a dropped and a renamed table leave the pipeline: their lake tables are kept
    and marked with why, and later runs, whose configuration still names them, go on."""
    database = mysql_database.database
    names = ("orders", "payments", "refunds", "invoices", "credits", "ledger")
    leaving = {"dropped": 100, "moved": 50}
    pipeline = _running(
        monkeypatch, tmp_path, mysql_database, dict.fromkeys(names, 120) | leaving, chunk_size=200
    )
    execute(mysql_database, "ALTER TABLE refunds ADD COLUMN extra INT DEFAULT 1")
    with writers_running(mysql_database, 43, "orders", "payments", "ledger", pause_s=0.01):
        # One kind per table, all in one run: MODIFY to another Delta type (a decimal's scale),
        # MODIFY narrowing a string, RENAME COLUMN, a primary key change, a column whose existing
        # rows MySQL computes (an expression default). ledger changes nothing and streams on.
        execute(
            mysql_database,
            # A change before the retype, certain (the writer's picks are random): the changelog
            # holds amount as DECIMAL(10,2) history, and the new type goes to a column of its own.
            "UPDATE orders SET amount = amount + 1 ORDER BY id LIMIT 1",
            "ALTER TABLE orders MODIFY amount DECIMAL(12,3)",
            "ALTER TABLE payments MODIFY customer VARCHAR(30) NOT NULL",
            "ALTER TABLE refunds RENAME COLUMN extra TO extra2",
            "ALTER TABLE invoices DROP PRIMARY KEY, ADD PRIMARY KEY (id, customer)",
            "ALTER TABLE credits ADD COLUMN created DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6)",
            "DROP TABLE dropped",
            "RENAME TABLE moved TO moved_2025",
        )
        changed = _run(pipeline)
        assert_exact_at(frozen_replica, checkpoint(changed), pipeline.lake, database, *names)
        assert _actions(changed) == {
            "orders": ["resnapshot"], "payments": ["resnapshot"], "refunds": ["evolve", "resnapshot"],
            "invoices": ["resnapshot"], "credits": ["resnapshot"], "dropped": ["leave"], "moved": ["leave"],
        }  # fmt: skip
        assert (
            "renamed to" in _target(pipeline, database, "moved").metadata().configuration[DEPARTURE_PROPERTY]
        )
        gone = _target(pipeline, database, "dropped")
        assert gone.to_pyarrow_table().num_rows == 100
        assert "dropped" in gone.metadata().configuration[DEPARTURE_PROPERTY]
        assert xcom_value(changed, "replicate", "plan")["tables"] == []  # re-snapshotted after the DDL
        log = capfd.readouterr()
        assert f"{database}.refunds left the pipeline to be snapshotted again: a column was renamed" in (
            log.out + log.err
        )  # the task log says which table and why

        # The next run streams every table again, the re-snapshotted ones included. A change to
        # orders after the re-snapshot is certain in it (the writer's picks are random).
        execute(mysql_database, "UPDATE orders SET amount = amount + 1 ORDER BY id LIMIT 1")
        later = _run(pipeline)
        assert_exact_at(frozen_replica, checkpoint(later), pipeline.lake, database, *names)
        assert _actions(later) == {}
        changelog = DeltaTable(str(LakeLayout(pipeline.lake).changelog(database, "orders")))
        assert "amount__decimal128_12_3" in changelog.schema().to_arrow().names  # history keeps its types


def _swap_in_a_copy(endpoint: MySqlEndpoint, table: str, copy: str, old: str, alter: str | None) -> None:
    """A migration tool's copy and atomic cut-over, by hand, with the statements gh-ost issues.

    The copy is kept equal with triggers, as pt-online-schema-change does (gh-ost does it by reading
    the binlog), filled with ``INSERT IGNORE ... SELECT``, and swapped in by gh-ost's cut-over: a
    sentry table, ``LOCK TABLES``, the ``RENAME`` waiting on a second connection, then the sentry
    dropped and the lock released.
    """
    columns = ["id", "customer", "amount", "status", "note", "updated_at"]
    listed, new_values = ", ".join(columns), ", ".join(f"NEW.{c}" for c in columns)
    execute(
        endpoint, f"CREATE TABLE {copy} LIKE {table}", *([f"ALTER TABLE {copy} {alter}"] if alter else [])
    )
    execute(
        endpoint,
        f"CREATE TRIGGER {copy}_ins AFTER INSERT ON {table} FOR EACH ROW "
        f"REPLACE INTO {copy} ({listed}) VALUES ({new_values})",
        f"CREATE TRIGGER {copy}_upd AFTER UPDATE ON {table} FOR EACH ROW BEGIN "
        f"DELETE FROM {copy} WHERE id = OLD.id; REPLACE INTO {copy} ({listed}) VALUES ({new_values}); END",
        f"CREATE TRIGGER {copy}_del AFTER DELETE ON {table} FOR EACH ROW "
        f"DELETE FROM {copy} WHERE id = OLD.id",
        f"INSERT IGNORE INTO {copy} ({listed}) SELECT {listed} FROM {table} LOCK IN SHARE MODE",
        f"CREATE TABLE {old} (id INT AUTO_INCREMENT PRIMARY KEY) COMMENT='ghost-cut-over-sentry'",
    )
    with endpoint.connect() as locking, locking.cursor() as cursor:
        cursor.execute(f"LOCK /* gh-ost */ TABLES {table} WRITE, {old} WRITE")
        renamer = threading.Thread(
            target=execute, args=(endpoint, f"RENAME /* gh-ost */ TABLE {table} TO {old}, {copy} TO {table}")
        )
        renamer.start()
        time.sleep(1.0)  # the RENAME now waits for the lock
        cursor.execute(f"DROP /* gh-ost */ TABLE IF EXISTS {old}")
        cursor.execute("UNLOCK TABLES")
    renamer.join(timeout=60)
    execute(endpoint, f"DROP TABLE IF EXISTS {old}")


def test_migration_tool_swaps_continue_with_the_same_columns_and_resnapshot_with_new_ones(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    database = mysql_database.database
    pipeline = _running(monkeypatch, tmp_path, mysql_database, {"orders": 150})
    with writers_running(mysql_database, 53, "orders", pause_s=0.01):
        # pt-online-schema-change's names, a rebuild that keeps the columns: streaming goes on.
        _swap_in_a_copy(mysql_database, "orders", "_orders_new", "_orders_old", None)
        rebuilt = _run(pipeline)
        assert_exact_at(frozen_replica, checkpoint(rebuilt), pipeline.lake, database, "orders")
        assert _actions(rebuilt) == {"orders": ["unchanged"]}

        # gh-ost's names, with a column added on the ghost table: the new table is snapshotted.
        _swap_in_a_copy(
            mysql_database, "orders", "_orders_gho", "_orders_del", "ADD COLUMN score INT DEFAULT 3"
        )
        migrated = _run(pipeline)
        assert_exact_at(frozen_replica, checkpoint(migrated), pipeline.lake, database, "orders")
        assert _actions(migrated) == {"orders": ["resnapshot"]}
        assert "score" in _target(pipeline, database, "orders").schema().to_arrow().names

        # A copy declared otherwise under the same Delta type: DATETIME(6) made DATETIME rounds
        # every existing row's time in the copy, so the lake's values are stale: re-snapshotted.
        _swap_in_a_copy(mysql_database, "orders", "_orders_gho", "_orders_del", "MODIFY updated_at DATETIME")
        rounded = _run(pipeline)
        assert_exact_at(frozen_replica, checkpoint(rounded), pipeline.lake, database, "orders")
        assert _actions(rounded) == {"orders": ["resnapshot"]}
