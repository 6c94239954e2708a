"""A statement-logged UPDATE of a tracked table (a session with binlog_format=STATEMENT), through the
shipped DAG with writers running: ``stop`` fails the task with the application's own error line as
the failure reason, and re-snapshotting the table (the runbook) gets the pipeline past it;
``statement_changes: resnapshot`` re-snapshots that table within the run and the run ends exact,
and ``verify_lake`` compares the table in that run and the next (it skipped it for good before,
issue 33), which ``airflow-mysql-cdc status`` shows as a member. One pipeline goes through both (its
setup is the expensive part).

Every green run is compared with a replica frozen at the run's published end set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.runs.status import main as status_command
from tests.support.airflow import task_states, xcom_value
from tests.support.frozen_replica import FrozenReplica
from tests.support.mysql import execute
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

VERIFIED = (*ALL_TASKS, "verify_lake")
STATEMENT = "UPDATE orders SET status = 'shipped', amount = amount + 1 WHERE id <= 40"


def _statement_logged(endpoint: MySqlEndpoint) -> str:
    """The statement in an admin's console with binlog_format=STATEMENT; its transaction's GTID
    (the session's own: writers commit in between)."""
    [(gtid,)] = execute(
        endpoint,
        "SET SESSION binlog_format = 'STATEMENT'",
        "BEGIN",
        STATEMENT,
        "COMMIT",
        "SELECT GTID FROM performance_schema.events_transactions_current"
        " WHERE THREAD_ID = PS_CURRENT_THREAD_ID()",
    )
    assert GtidSet.parse(gtid).count() == 1
    return str(gtid)


def _green(pipeline: Pipeline, tasks: tuple[str, ...] = ALL_TASKS) -> Any:
    dag_run = pipeline.run(now())
    assert task_states(dag_run) == dict.fromkeys(tasks, "success")
    return dag_run


def _pipeline(monkeypatch, tmp_path: Path, endpoint: MySqlEndpoint, **overrides: Any) -> Pipeline:
    seed(endpoint, "orders", 150)
    seed(endpoint, "payments", 80)
    tables = [f"{endpoint.database}.orders", f"{endpoint.database}.payments"]
    pipeline = Pipeline(monkeypatch, tmp_path, endpoint.with_database(None), tables, **overrides)
    _green(pipeline)
    return pipeline


def test_stop_names_the_statement_a_re_snapshot_gets_past_it_and_the_resnapshot_policy_needs_no_one(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture,
) -> None:
    """One pipeline, writers running throughout: with ``stop`` (the default) the run fails naming the
    statement, and the runbook's re-snapshot gets the pipeline past it; then with ``resnapshot`` the
    next statement-logged change re-snapshots the table within the run, which ends exact."""
    database = mysql_database.database
    orders = f"{database}.orders"
    pipeline = _pipeline(monkeypatch, tmp_path, mysql_database)  # statement_changes: stop, the default
    with writers_running(mysql_database, 73, "orders", "payments", pause_s=0.01):
        before = pipeline.lake_position()
        gtid = _statement_logged(mysql_database)
        capfd.readouterr()
        stopped = pipeline.run(now())
        assert task_states(stopped)["replicate"] == "failed"
        log = capfd.readouterr()
        text = log.out + log.err
        # The task's exception, as the UI shows it: the application's own line first, the exit code's
        # meaning last; the spark-submit command line that ended it is in the log only (issue 34).
        reason = (
            "AirflowFailException: airflow-mysql-cdc ERROR binlog: StatementBasedChangeError: "
            f"statement-logged change of tracked table(s) {orders} in transaction {gtid}: {STATEMENT!r}"
        )
        assert reason in text
        assert text[text.index(reason) :].splitlines()[1] == (
            f"replicate failed: {ExitCode.BINLOG.meaning} (exit code 5)"
        )
        assert "statement_changes: resnapshot" in text and "enforce binlog_format=ROW" in text
        # The engine names the way out (re-snapshot the table); the operator says how in Airflow.
        assert f'In Airflow: trigger the pipeline DAG with the conf {{"resnapshot": ["{orders}"]}}' in text
        position = pipeline.lake_position()
        assert before.issubset(position) and not GtidSet.parse(gtid).issubset(position)

        # The runbook: re-snapshot the table, then clear or rerun. The table's new snapshot holds the
        # statement, so the stream passes it.
        snapshot_table(mysql_database.with_database(None), pipeline.lake, orders, chunk_size=60, restart=True)
        passed = _green(pipeline)
        assert_exact_at(frozen_replica, checkpoint(passed), pipeline.lake, database, "orders", "payments")

        # With the resnapshot policy the pipeline gets past the next one by itself, in the same run;
        # a full verify_lake (writers on) compares the re-snapshotted table in that run and the next.
        pipeline.configure(statement_changes="resnapshot", verify="full")
        gtid = _statement_logged(mysql_database)
        capfd.readouterr()
        passed = _green(pipeline, VERIFIED)
        assert_exact_at(frozen_replica, checkpoint(passed), pipeline.lake, database, "orders", "payments")
        changes = xcom_value(passed, "replicate", "applied")["schema_changes"]
        assert [(c["table"], c["action"], c["gtid"]) for c in changes] == [(orders, "resnapshot", gtid)]
        log = capfd.readouterr()
        # The task log says what the table met: a statement-logged change, not a schema change.
        said = f"Statement-logged change {gtid}: {orders} left the pipeline to be snapshotted again: "
        assert f"{said}changed by a statement-logged UPDATE" in log.out + log.err
        assert "Schema change" not in log.out + log.err
        assert "NOT FULLY CHECKED" not in log.out + log.err

        later = _green(pipeline, VERIFIED)  # both tables stream again
        assert_exact_at(frozen_replica, checkpoint(later), pipeline.lake, database, "orders", "payments")
        assert xcom_value(later, "replicate", "applied")["schema_changes"] == []
        for verified in (passed, later):
            results = {table["table"]: table for table in xcom_value(verified, "verify_lake")["tables"]}
            assert {name: (table["status"], table["coverage"]) for name, table in results.items()} == {
                orders: ("clean", 1.0), f"{database}.payments": ("clean", 1.0),
            }  # fmt: skip
            assert results[orders]["rows_compared"] == results[orders]["table_rows"] > 0

    # `airflow-mysql-cdc status` shows the re-snapshotted table as a member, the departure as history.
    capfd.readouterr()
    assert status_command(["status", "--lake-root", str(pipeline.lake), "--pipeline-id", "e2e"]) == 0
    shown = capfd.readouterr().out
    snapshot_id = LakeState(pipeline.lake, "e2e").pipeline().members[orders]
    assert (
        f"  {orders}: member (joined with snapshot {snapshot_id}); snapshotted again after it left at "
        f"{gtid} (resnapshot: "
    ) in shown
    assert "left the pipeline at" not in shown
