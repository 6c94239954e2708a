"""A statement-logged change of a tracked table (a session with binlog_format=STATEMENT): the
pipeline stops before it naming table, GTID and statement, or re-snapshots just that table, and a
table snapshotted after the statement streams past it. Engine level, on a real server and lake;
the shipped DAG's runs are in test_pipeline_dag_statement_changes.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.apply.config import ApplyConfig, ApplyResult, StatementChangeMode
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.binlog.errors import StatementBasedChangeError
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineStateStore
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.lake import ConcurrentWriter, assert_lake_equals_source
from tests.support.mysql import execute, scalar

pytestmark = pytest.mark.mysql

STATEMENT = "UPDATE orders SET status = 'paid', amount = amount * 2 WHERE id <= 30"


def _seed(endpoint: MySqlEndpoint, table: str, rows: int) -> None:
    execute(endpoint, ConcurrentWriter.DDL.replace("orders", table))
    values = ", ".join(f"({i}, 'c{i}', {i}.25, 'new', '[{i}]', NOW(6))" for i in range(1, rows + 1))
    execute(endpoint, f"INSERT INTO {table} VALUES {values}")


def _executed(endpoint: MySqlEndpoint) -> GtidSet:
    return GtidSet.parse(scalar(endpoint, "SELECT @@GLOBAL.gtid_executed"))


def _by_statement(endpoint: MySqlEndpoint, *statements: str, binlog_format: str = "STATEMENT") -> str:
    """Run ``statements`` in one transaction of a session with this binlog_format; its GTID."""
    before = _executed(endpoint)
    execute(endpoint, f"SET SESSION binlog_format = '{binlog_format}'", "BEGIN", *statements, "COMMIT")
    new = _executed(endpoint) - before
    assert new.count() == 1
    return str(new)


def _apply(
    endpoint: MySqlEndpoint, lake: Path, tables: tuple[str, ...], start: GtidSet, mode: StatementChangeMode
) -> ApplyResult:
    config = ApplyConfig(
        pipeline_id="main", lake_root=str(lake), tables=tables, start_gtids=start, mode="until_caught_up",
        batch_max_rows=300, batch_max_seconds=0.2, heartbeat_s=0.5, statement_changes=mode,
    )  # fmt: skip
    return run_apply(config, endpoint)


def _lake_position(lake: Path) -> GtidSet:
    state = PipelineStateStore(LakeLayout(lake).state, "main").read()
    assert state is not None
    return state.applied_gtids


def _pipeline(endpoint: MySqlEndpoint, lake: Path) -> tuple[str, str, GtidSet]:
    """orders and payments, snapshotted and streamed once: (orders, payments, the lake's position)."""
    database = endpoint.database
    _seed(endpoint, "orders", 120)
    _seed(endpoint, "payments", 60)
    orders, payments = f"{database}.orders", f"{database}.payments"
    starts = [snapshot_table(endpoint, lake, t, chunk_size=50).stream_start for t in (orders, payments)]
    position = _apply(endpoint, lake, (orders, payments), starts[0] | starts[1], "stop").end_gtids
    return orders, payments, position


def test_stop_fails_before_the_statement_naming_table_gtid_and_statement_with_the_rest_applied(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    orders, payments, position = _pipeline(mysql_database, tmp_path)
    execute(mysql_database, "INSERT INTO payments VALUES (900, 'before', 1, 'new', NULL, NOW(6))")
    before_statement = _executed(mysql_database)
    gtid = _by_statement(mysql_database, STATEMENT)
    execute(mysql_database, "INSERT INTO payments VALUES (901, 'after', 1, 'new', NULL, NOW(6))")

    with pytest.raises(StatementBasedChangeError) as raised:
        _apply(mysql_database, tmp_path, (orders, payments), position, "stop")

    error = raised.value
    assert (error.tables, error.gtid) == ((orders,), gtid)
    message = str(error)
    assert orders in message and gtid in message and STATEMENT in message
    assert "statement_changes: resnapshot" in message and "re-snapshot the table" in message
    assert _lake_position(tmp_path) == before_statement  # everything before it, nothing from it on


def test_resnapshot_takes_only_that_table_out_and_a_new_snapshot_joins_it_exactly(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    orders, payments, position = _pipeline(mysql_database, tmp_path)
    # MIXED: the UPDATE is logged as a statement, the INSERT (UUID() is unsafe) as rows.
    gtid = _by_statement(
        mysql_database,
        STATEMENT,
        "INSERT INTO payments VALUES (900, UUID(), 1, 'new', NULL, NOW(6))",
        binlog_format="MIXED",
    )
    execute(mysql_database, "UPDATE orders SET status = 'shipped' WHERE id = 100")
    execute(mysql_database, "UPDATE payments SET status = 'shipped' WHERE id = 10")

    first = _apply(mysql_database, tmp_path, (orders, payments), position, "resnapshot")

    assert first.to_resnapshot == [orders]
    [departure] = first.schema_changes
    assert (departure.gtid, departure.action) == (gtid, "resnapshot")
    assert "statement-logged UPDATE" in departure.reason
    assert_lake_equals_source(mysql_database, tmp_path, mysql_database.database, "payments")
    # What the replicate operator does next: snapshot the table again, apply on; it joins.
    snapshot_table(mysql_database, tmp_path, orders, chunk_size=50, restart=True)
    second = _apply(mysql_database, tmp_path, (orders, payments), first.end_gtids, "resnapshot")
    assert second.to_resnapshot == []
    for table in ("orders", "payments"):
        assert_lake_equals_source(mysql_database, tmp_path, mysql_database.database, table)


def test_a_table_snapshotted_after_the_statement_streams_past_it(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    orders, payments, position = _pipeline(mysql_database, tmp_path)
    _by_statement(mysql_database, STATEMENT)
    with pytest.raises(StatementBasedChangeError):
        _apply(mysql_database, tmp_path, (orders, payments), position, "stop")
    execute(mysql_database, "UPDATE orders SET status = 'shipped' WHERE id = 100")

    # The runbook's way out under "stop": re-snapshot the table, run again.
    snapshot_table(mysql_database, tmp_path, orders, chunk_size=50, restart=True)
    execute(mysql_database, "UPDATE orders SET status = 'shipped' WHERE id = 101")
    result = _apply(mysql_database, tmp_path, (orders, payments), position, "stop")

    assert result.schema_changes == []
    assert _executed(mysql_database).issubset(result.end_gtids)
    for table in ("orders", "payments"):
        assert_lake_equals_source(mysql_database, tmp_path, mysql_database.database, table)


def test_a_statement_logged_load_data_is_a_statement_change_too(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    orders, payments, position = _pipeline(mysql_database, tmp_path)
    rows = tmp_path / "rows.tsv"
    rows.write_text("500\tloaded\t1.00\tnew\t\\N\t\\N\n501\tloaded\t2.00\tnew\t\\N\t\\N\n")
    before = _executed(mysql_database)
    execute(
        mysql_database,
        "SET SESSION binlog_format = 'STATEMENT'",
        f"LOAD DATA INFILE '{rows}' INTO TABLE orders",
    )
    gtid = str(_executed(mysql_database) - before)

    with pytest.raises(StatementBasedChangeError) as raised:
        _apply(mysql_database, tmp_path, (orders, payments), position, "stop")

    assert raised.value.gtid == gtid and "LOAD DATA" in str(raised.value)
