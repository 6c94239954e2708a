"""BIGINT UNSIGNED keys near 2^64 through the shipped DAG, while a writer moves them (issue 33).

With deltalake 1.6.6 a MERGE with the early file filter (``streamed_exec=False``) skipped the files
holding decimal(20,0) keys of 2^63 and more, whose statistics delta-rs had rounded through a float:
the first batch into a snapshot was exact, and every later one inserted a second row for a key it
should have updated, every run green. The unit-level proof is
tests/integration/test_write_path_differential.py; this is the same promise kept end to end: the
shipped DAG (``dag.test()``), a real MySQL, spark-submit and Delta, several runs and the built-in
maintenance's sorted rewrite, the lake compared after every run with a replica frozen at that run's
published end set while the writer goes on.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.support.airflow import task_states, xcom_value
from tests.support.frozen_replica import FrozenReplica
from tests.support.pipeline import (
    ALL_TASKS,
    Pipeline,
    assert_exact_at,
    chain_records,
    checkpoint,
    finish,
    now,
)
from tests.support.unsigned_keys import (
    changed_or_gone,
    cold_keys_below_2_64,
    create_and_seed,
    duplicate_keys,
    keys_across_2_63,
    keys_by_writing_operation,
    keys_near_2_64,
    readers_missing_keys,
    start_writers,
    target_rows,
)

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db"), pytest.mark.slow]

RUNS = 5
MAINTAINED_RUN = 3
"""The run whose ``maintain_lake`` rewrites the targets sorted; the runs after it MERGE into that."""
EARLIER_ROWS_CHANGED = 20
"""Rows each run from the second on must change that lie in files an earlier run's MERGE (or the
maintenance's rewrite) wrote: where the early filter, trusting those files' statistics, missed them."""


def test_daily_runs_keep_bigint_unsigned_keys_near_2_64_unique_and_exact_at_every_end_set(
    mysql_database: MySqlEndpoint,
    frozen_replica: FrozenReplica,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two tables keyed ``id BIGINT UNSIGNED``: ``accounts`` within the last two million of the
    range, ``snowflakes`` across 2^63 (snowflake-style and hashed ids, and old small ids). One writer
    per table upserts, updates ranges, deletes and moves keys throughout five runs; the third run's
    maintenance rewrites the targets sorted. After every run: the lake equals a replica frozen at the
    published end set, no target holds a key twice, delta-rs's filtered reads find every key of 2^63
    and more, and (from the third run) the run changed rows in files that earlier runs' MERGEs, or
    the maintenance's rewrite, wrote."""
    database = mysql_database.database
    pools = {"accounts": keys_near_2_64(3000), "snowflakes": keys_across_2_63(1500)}
    cold = {"accounts": cold_keys_below_2_64(1000), "snowflakes": list(range(1, 1001))}  # the ids before
    for number, (table, keys) in enumerate(pools.items()):
        create_and_seed(mysql_database, table, keys, len(keys) * 2 // 3, cold=cold[table], seed=number)
    tables = list(pools)
    pipeline = Pipeline(
        monkeypatch, tmp_path, mysql_database.with_database(None), [f"{database}.{t}" for t in tables],
        chunk_size=500, maintenance={"enabled": False},
    )  # fmt: skip
    targets = {table: LakeLayout(pipeline.lake).target(database, table) for table in tables}
    records: list[dict] = []
    lake_rows: dict[str, dict] = {}
    writers = start_writers(mysql_database, pools, pause_s=0.02)
    try:
        for number in range(1, RUNS + 1):
            if number == MAINTAINED_RUN:  # due at once (none ran yet), then not for a day
                pipeline.configure(maintenance={"small_files": 2})
            # The operation that wrote the file each key lies in, before the run.
            written_by = {table: keys_by_writing_operation(uri) for table, uri in targets.items() if records}
            dag_run = pipeline.run(now() + datetime.timedelta(seconds=6))
            assert task_states(dag_run) == dict.fromkeys(ALL_TASKS, "success")
            record = checkpoint(dag_run)
            if records:
                assert record["start_gtids"] == records[-1]["end_gtids"]
            assert_exact_at(frozen_replica, record, pipeline.lake, database, *tables)
            maintained = xcom_value(dag_run, "maintain_lake")
            assert (maintained["skipped"] is None) == (number == MAINTAINED_RUN), maintained["skipped"]
            if number == MAINTAINED_RUN:
                targets_done = [report for report in maintained["tables"] if report["role"] == "target"]
                actions = {report["name"]: report["actions"] for report in targets_done}
                for table in tables:  # sorted by id (or because older files' statistics were inexact)
                    assert any(a.startswith("rewritten") for a in actions[f"{database}.{table}"])
            for table, uri in targets.items():
                assert duplicate_keys(uri) == [], f"run {number}: {table} holds keys twice"
                after = target_rows(uri)
                assert readers_missing_keys(uri, list(after)) == [], f"run {number}: {table}"
                if records:  # the first run streams only to its snapshot's consistent point
                    assert record["tables"][f"{database}.{table}"]["rows_applied"] > 0
                if len(records) >= 2:
                    # Where the bug was: rows in files a MERGE of an earlier run wrote (the first run
                    # may have merged nothing), or, right after the maintenance, its sorted rewrite.
                    operation = "OPTIMIZE" if number == MAINTAINED_RUN + 1 else "MERGE"
                    if operation == "OPTIMIZE":
                        assert set(written_by[table]) == {"OPTIMIZE"}, written_by[table].keys()
                    changed = changed_or_gone(lake_rows[table], after) & written_by[table].get(
                        operation, set()
                    )
                    assert len(changed) >= EARLIER_ROWS_CHANGED, (number, table, len(changed))
                lake_rows[table] = after
            records.append(record)
    finally:
        for writer in writers:
            writer.stop()
    finish(writers)
    assert [record["run_id"] for record in chain_records(pipeline.lake)] == [r["run_id"] for r in records]
