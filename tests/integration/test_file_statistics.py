"""Delta file statistics only where exact: the property every writer honours, and old files rewritten."""

from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, QueryBuilder, write_deltalake

from airflow_mysql_cdc.engine.lake.delta_layout import target_schema
from airflow_mysql_cdc.engine.lake.evolution import AddedColumn
from airflow_mysql_cdc.engine.lake.evolution_writes import add_columns
from airflow_mysql_cdc.engine.lake.file_statistics import (
    EXACT_STATISTICS_SINCE_PROPERTY,
    STATISTICS_COLUMNS_PROPERTY,
    files_with_stale_statistics,
    statistics_columns,
    statistics_property,
    sync_statistics_columns,
)
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
from airflow_mysql_cdc.engine.lake.maintenance.steps import MaintainedTable, maintain_table
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.lake_commits import DeltaSnapshotWriter
from tests.support.write_path import duckdb_connection, readers_missing_rows

D = decimal.Decimal
UNSIGNED = pa.decimal128(20, 0)


def _stats(path: str) -> list[dict]:
    """The statistics of every file the log's JSON commits added, as written."""
    added = []
    for commit in sorted(Path(path, "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action and action["add"].get("stats"):
                added.append(json.loads(action["add"]["stats"]))
    return added


def test_delta_rs_still_writes_decimal_statistics_through_a_float(tmp_path: Path) -> None:
    """Why wide decimals keep no statistics (engine/lake/file_statistics.py). When this fails, delta-rs
    records them exactly: prove it with the write-path test and raise EXACT_DECIMAL_DIGITS."""
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"k": pa.array([D(2**63 - 2), D(2**63)], UNSIGNED)}))
    written = _stats(path)[0]
    assert (written["minValues"]["k"], written["maxValues"]["k"]) != (2**63 - 2, 2**63), (
        "delta-rs now writes exact decimal(20,0) statistics"
    )


def test_delta_rs_still_misreads_datetime_statistics_after_2262(tmp_path: Path) -> None:
    """Why DATETIME columns keep no statistics (engine/lake/file_statistics.py): delta-rs records
    timestamps to the millisecond and its reader skips a file whose maximum lost its microseconds
    after 2262. When this fails, delta-rs reads them right: prove it with the write-path test."""
    path = str(tmp_path / "t")
    late = datetime.datetime(4920, 10, 27, 5, 41, 36, 1957)
    write_deltalake(
        path, pa.table({"k": pa.array([datetime.datetime(2000, 1, 1), late], pa.timestamp("us"))})
    )
    literal = "arrow_cast('4920-10-27T05:41:36.001957', 'Timestamp(Microsecond, None)')"
    sql = f"SELECT count(*) AS n FROM t WHERE k = {literal}"
    found = (
        pa.table(QueryBuilder().register("t", DeltaTable(path)).execute(sql).read_all())
        .column("n")[0]
        .as_py()
    )
    assert found == 0, "delta-rs now finds a DATETIME after 2262 by its file statistics"


def test_statistics_are_kept_for_exact_types_of_the_first_32_columns_and_the_key() -> None:
    fields = [pa.field(f"c{index}", pa.int32()) for index in range(40)]
    fields[3] = pa.field("c3", UNSIGNED)
    fields[4] = pa.field("c4", pa.decimal128(15, 2))
    fields[5] = pa.field("c5", pa.decimal128(16, 2))
    fields[6] = pa.field("c6", pa.binary())
    fields[7] = pa.field("c7", pa.timestamp("us"))
    fields[8] = pa.field("c8", pa.timestamp("us", tz="UTC"))
    schema = pa.schema([*fields, pa.field("day", pa.date32())])
    kept = statistics_columns(schema, row_key=("c35",), partition_by=("day",))
    assert kept == [f"c{index}" for index in range(32) if index not in (3, 5, 6, 7)] + ["c35"]


def test_the_property_names_any_column_and_delta_rs_keeps_exactly_those(tmp_path: Path) -> None:
    names = ["a,b", "c.d", "e f", "g`h", "ü", "wide"]
    schema = pa.schema([pa.field(name, pa.int64()) for name in names[:-1]] + [pa.field("wide", UNSIGNED)])
    path = str(tmp_path / "t")
    DeltaTable.create(
        path, schema=schema, configuration={STATISTICS_COLUMNS_PROPERTY: statistics_property(schema)}
    )
    row = {name: [1] for name in names[:-1]} | {"wide": pa.array([D(2**64 - 1)], UNSIGNED)}
    write_deltalake(path, pa.table(row, schema=schema), mode="append")
    written = _stats(path)[0]
    assert set(written["minValues"]) == set(names[:-1]) == set(written["maxValues"])


def test_a_lake_written_before_exact_statistics_is_read_right_once_maintained(tmp_path: Path) -> None:
    """An upgraded lake: delta-rs's readers ignore the old statistics of a column as soon as the
    property leaves it out; DuckDB's reader trusts them until maintenance rewrites the files."""
    path = str(tmp_path / "target")
    keys = [2**63 - 2, 2**63, 2**64 - 3, 2**64 - 1, 5, 2**53 + 1]
    for key in keys:  # a file per key, statistics through a float
        write_deltalake(path, pa.table({"id": pa.array([D(key)], UNSIGNED), "n": [key % 7]}), mode="append")
    duckdb = duckdb_connection()
    assert readers_missing_rows(path, "id", duckdb), "the legacy statistics should mislead the readers"

    table = DeltaTable(path)
    assert sync_statistics_columns(table, ("id",))
    configuration = table.metadata().configuration
    assert configuration[STATISTICS_COLUMNS_PROPERTY] == "`n`"
    assert EXACT_STATISTICS_SINCE_PROPERTY in configuration
    assert files_with_stale_statistics(table).num_rows == len(keys)
    assert not sync_statistics_columns(table, ("id",)), "a second sync changes nothing"

    report = maintain_table(
        table, MaintainedTable(path, "target", "db.t", "id", ("id",)), MaintenancePolicy()
    )
    assert any("inexact" in action for action in report.actions), report.actions
    assert files_with_stale_statistics(DeltaTable(path)).num_rows == 0
    assert readers_missing_rows(path, "id", duckdb) == []
    assert all("id" not in stats["minValues"] for stats in _stats(path)[-1:])


def test_a_changelog_written_before_exact_statistics_is_rewritten_day_by_day(tmp_path: Path) -> None:
    path = str(tmp_path / "changelog")
    for day, key in [(1, 2**64 - 1), (2, 2**63), (2, 2**63 + 9), (3, 7)]:
        committed = datetime.datetime(2026, 1, day, tzinfo=datetime.UTC)
        rows = pa.table({
            "id": pa.array([D(key)], UNSIGNED),
            "_cdc_commit_ts": pa.array([committed], pa.timestamp("us", tz="UTC")),
            "_cdc_commit_date": pa.array([committed.date()]),
        })  # fmt: skip
        write_deltalake(path, rows, mode="append", partition_by=["_cdc_commit_date"])
    table = DeltaTable(path)
    sync_statistics_columns(table, ())
    report = maintain_table(table, MaintainedTable(path, "changelog", "db.t"), MaintenancePolicy())
    assert any("3 day(s)" in action for action in report.actions), report.actions
    assert readers_missing_rows(path, "id", duckdb_connection()) == []


def test_a_re_snapshot_that_widens_a_key_to_bigint_unsigned_drops_its_statistics(tmp_path: Path) -> None:
    ref = TableRef("db", "t")
    narrow = (ColumnType("id", "int", bits=64), ColumnType("v", "int", bits=32))
    DeltaSnapshotWriter(str(tmp_path), ref, narrow).start([Chunk(0, None, None)], ("id",))
    target = DeltaTable(str(tmp_path / "db" / "t"))
    assert target.metadata().configuration[STATISTICS_COLUMNS_PROPERTY].startswith("`id`")
    wide = (ColumnType("id", "uint", bits=64), ColumnType("v", "int", bits=32))
    DeltaSnapshotWriter(str(tmp_path), ref, wide).start([Chunk(0, None, None)], ("id",))
    target.update_incremental()
    columns = target.metadata().configuration[STATISTICS_COLUMNS_PROPERTY]
    assert columns == statistics_property(target_schema(wide), ("id",)) and "`id`" not in columns


def test_columns_added_by_a_schema_change_keep_statistics_only_where_exact(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    schema = target_schema((ColumnType("id", "int", bits=64),))
    DeltaTable.create(
        path, schema=schema, configuration={STATISTICS_COLUMNS_PROPERTY: statistics_property(schema)}
    )
    table = DeltaTable(path)
    added = tuple(
        AddedColumn(column, None)
        for column in (ColumnType("qty", "int", bits=32), ColumnType("big", "uint", bits=64))
    )
    add_columns(table, added, CommitProperties(max_commit_retries=0))
    columns = DeltaTable(path).metadata().configuration[STATISTICS_COLUMNS_PROPERTY]
    assert "`qty`" in columns and "`big`" not in columns


def test_a_lake_without_inexact_columns_is_not_rewritten_on_upgrade(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(
        path, pa.table({"id": [1, 2], "amount": pa.array([D("1.50"), D("2.25")], pa.decimal128(12, 2))})
    )
    table = DeltaTable(path)
    assert sync_statistics_columns(table, ("id",))
    assert EXACT_STATISTICS_SINCE_PROPERTY not in table.metadata().configuration
    assert files_with_stale_statistics(table).num_rows == 0


@pytest.mark.parametrize("precision", [15, 16])
def test_decimals_keep_statistics_up_to_15_digits(precision: int) -> None:
    schema = pa.schema([pa.field("amount", pa.decimal128(precision, 2))])
    assert statistics_columns(schema) == (["amount"] if precision <= 15 else [])
