"""A DDL landing on a table while it is being snapshotted restarts that snapshot with the new definition.

The DDL runs between two windows (the snapshot's window runner is wrapped); the table is then
streamed from its snapshot through the DDL, and the lake equals the source for every column.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.snapshot.table_definition import (
    DefinitionUnstableError,
    SnapshotTableDroppedError,
)
from airflow_mysql_cdc.engine.snapshot.window_task import WindowTask, run_sequentially
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.lake import assert_lake_equals_source
from tests.support.mysql import execute, scalar
from tests.support.pipeline import seed

pytestmark = pytest.mark.mysql


def _ddl_after_the_first_window(endpoint: MySqlEndpoint, *statements: str):
    """A window runner that runs ``statements`` once, after the first window was read."""
    pending = list(statements)

    def run(tasks: Sequence[WindowTask]) -> Iterator:
        for number, window in enumerate(run_sequentially(tasks)):
            yield window
            if number == 0 and pending:
                execute(endpoint, pending.pop(0))

    return run


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER TABLE orders ADD COLUMN score INT DEFAULT 3",
        "ALTER TABLE orders DROP COLUMN note",
        "ALTER TABLE orders MODIFY amount DECIMAL(14,4)",
        "ALTER TABLE orders DROP PRIMARY KEY, ADD PRIMARY KEY (id, customer)",
    ],
)
def test_a_ddl_during_a_snapshot_restarts_it_and_the_stream_continues_exactly(
    mysql_database: MySqlEndpoint, tmp_path: Path, statement: str
) -> None:
    database = mysql_database.database
    seed(mysql_database, "orders", 120)
    name = f"{database}.orders"
    before = GtidSet.parse(scalar(mysql_database, "SELECT @@gtid_executed"))
    result = snapshot_table(
        mysql_database, tmp_path, name, chunk_size=30,
        run_windows=_ddl_after_the_first_window(mysql_database, statement),
    )  # fmt: skip
    assert result.restarts == 1 and result.rows == 120
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")

    execute(
        mysql_database,
        "UPDATE orders SET amount = amount + 1 WHERE id <= 10",
        "DELETE FROM orders WHERE id = 11",
    )
    config = ApplyConfig(
        pipeline_id="p", lake_root=str(tmp_path), tables=(name,), start_gtids=before,
        batch_max_seconds=0.2, heartbeat_s=0.5,
    )  # fmt: skip
    applied = run_apply(config, mysql_database)
    # A stream from before the snapshot (a pipeline the table joins) meets the DDL, which the snapshot
    # already reflects: nothing to do for it.
    assert [change.action for change in applied.schema_changes] == ["unchanged"]
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")


def test_a_table_changing_during_every_attempt_fails_the_snapshot_with_what_to_do(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    seed(mysql_database, "orders", 60)
    statements = [f"ALTER TABLE orders ADD COLUMN c{i} INT" for i in range(4)]

    def run(tasks: Sequence[WindowTask]) -> Iterator:
        for window in run_sequentially(tasks):
            yield window
            if statements:
                execute(mysql_database, statements.pop(0))

    with pytest.raises(
        DefinitionUnstableError, match="changed during each of 4 attempts.*run the snapshot again"
    ):
        snapshot_table(
            mysql_database, tmp_path, f"{mysql_database.database}.orders", chunk_size=30, run_windows=run
        )


def test_a_table_dropped_during_its_snapshot_fails_with_its_name(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    seed(mysql_database, "orders", 60)
    name = f"{mysql_database.database}.orders"
    with pytest.raises(SnapshotTableDroppedError, match=f"{name} no longer exists"):
        snapshot_table(
            mysql_database, tmp_path, name, chunk_size=30,
            run_windows=_ddl_after_the_first_window(mysql_database, "DROP TABLE orders"),
        )  # fmt: skip
    assert (
        scalar(
            mysql_database,
            "SELECT COUNT(*) FROM information_schema.TABLES"
            " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'orders'",
        )
        == 0
    )  # other tests' databases on the shared server have their own orders
