"""Snapshot throughput next to a plain SELECT * scan of the same table, measured in the same run.

Prints rows/s (median of --runs) for:
  1. plain scan: one connection, ``SELECT *``, rows fetched by PyMySQL (the baseline);
  1b. the same scan fetched as a window fetches (no PyMySQL decoders, cyclic collector paused), to
     show what the windows' watermarks, Arrow conversion and JSON re-printing cost on top;
  2. windows only: every chunk read through a snapshot window (watermarks, type normalisation),
     one reader, nothing written;
  3. snapshot, 1 reader: windows plus Delta commits, one chunk after another;
  4. snapshot on Spark local[K]: windows as parallel Spark tasks, Delta commits on the driver;
and the ratios 2/1, 2/1b, 3/1 and 4/3 (the parallel speedup). The variants take turns, round after round
(an untimed first round warms everything up), so a change in the machine's load hits all of them
alike; the load average is printed at the start and the end. Usage (sandbox running):

    .venv/bin/python scripts/bench_snapshot.py --rows 200000 --runs 3
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from airflow_mysql_cdc.engine.entrypoints.snapshot_to_delta import spark_runner  # noqa: E402
from airflow_mysql_cdc.engine.mysql.schema import TableRef, read_table_metadata  # noqa: E402
from airflow_mysql_cdc.engine.mysql.select_arrow import TEXT_RESULT_CONVERSIONS  # noqa: E402
from airflow_mysql_cdc.engine.mysql.types import read_table_column_types  # noqa: E402
from airflow_mysql_cdc.engine.snapshot.chunks import plan_chunks  # noqa: E402
from airflow_mysql_cdc.engine.snapshot.key_order import read_key_columns  # noqa: E402
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table  # noqa: E402
from airflow_mysql_cdc.engine.snapshot.window import open_window_connection, read_window  # noqa: E402
from airflow_mysql_cdc.engine.snapshot.window_task import run_sequentially  # noqa: E402
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint  # noqa: E402

TABLE = TableRef("bench_snapshot", "mixed")
DDL = """CREATE TABLE bench_snapshot.mixed (
    id INT PRIMARY KEY, name VARCHAR(60), amount DECIMAL(12,2), created DATETIME(6), doc JSON,
    payload BLOB, ratio DOUBLE, state ENUM('a','b','c'), counter BIGINT UNSIGNED, day DATE)"""


def build(endpoint: MySqlEndpoint, rows: int) -> None:
    with endpoint.connect() as connection, connection.cursor() as cursor:
        cursor.execute("DROP DATABASE IF EXISTS bench_snapshot")
        cursor.execute("CREATE DATABASE bench_snapshot")
        cursor.execute(DDL)
        cursor.execute("SET SESSION cte_max_recursion_depth = 100000000")
        cursor.execute(
            "INSERT INTO bench_snapshot.mixed WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n"
            f" WHERE i < {rows}) SELECT i, CONCAT('name-', i), i / 7, NOW(6) - INTERVAL i SECOND,"
            " JSON_OBJECT('i', i, 'tags', JSON_ARRAY('x', 'y')), REPEAT('b', 40), i / 3,"
            " ELT(1 + i % 3, 'a', 'b', 'c'), i * 1000, CURDATE() - INTERVAL (i % 1000) DAY FROM n"
        )


def plain_scan(endpoint: MySqlEndpoint) -> int:
    with endpoint.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {TABLE.quoted}")
        return len(cursor.fetchall())


def text_scan(endpoint: MySqlEndpoint) -> int:
    """The plain scan fetched the way a window fetches: no PyMySQL decoders, collector paused."""
    gc.disable()
    try:
        with endpoint.connect(conv=TEXT_RESULT_CONVERSIONS) as connection, connection.cursor() as cursor:
            cursor.execute(f"SELECT * FROM {TABLE.quoted}")
            return len(cursor.fetchall())
    finally:
        gc.enable()


def windows_only(endpoint: MySqlEndpoint, chunk_size: int) -> int:
    with endpoint.connect() as connection, connection.cursor() as cursor:
        metadata = read_table_metadata(cursor, TABLE)
        columns = read_table_column_types(cursor, TABLE.schema, TABLE.table)
        key_columns = read_key_columns(cursor, TABLE, metadata.key_columns)
        chunks = plan_chunks(connection, metadata, chunk_size)
    with open_window_connection(endpoint) as window_connection:
        return sum(
            len(
                read_window(
                    endpoint, TABLE, columns, metadata.key_columns, key_columns, chunk,
                    connection=window_connection,
                ).rows
            )
            for chunk in chunks
        )  # fmt: skip


def report(label: str, rates: list[float]) -> float:
    rate = statistics.median(rates)
    print(f"{label:38} {rate:>10,.0f} rows/s   (runs: {', '.join(f'{r:,.0f}' for r in rates)})", flush=True)
    return rate


def load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default="mysql://root@127.0.0.1:13306/")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--chunk-size", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--parallelism", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault(
        "PYSPARK_SUBMIT_ARGS",
        f"--master local[{args.parallelism}] --conf spark.ui.showConsoleProgress=false pyspark-shell",
    )
    endpoint = MySqlEndpoint.from_url(args.dsn).with_database(None)
    build(endpoint, args.rows)
    print(f"table {TABLE}: {args.rows:,} rows, 10 mixed columns, chunks of {args.chunk_size:,}")
    print(f"load average at start: {load()}")
    lake = Path(tempfile.mkdtemp(prefix="bench-snapshot-"))

    def snapshot(runner) -> int:
        result = snapshot_table(
            endpoint, lake, str(TABLE), chunk_size=args.chunk_size, run_windows=runner, restart=True
        )
        return result.rows

    runner, secrets, _ = spark_runner("bench-snapshot")  # (windows runner, their secrets, transfer)
    variants = {
        "1. plain SELECT * scan": lambda: plain_scan(endpoint),
        "1b. the same scan fetched as text": lambda: text_scan(endpoint),
        "2. windows only, 1 reader": lambda: windows_only(endpoint, args.chunk_size),
        "3. snapshot to Delta, 1 reader": lambda: snapshot(run_sequentially),
        f"4. snapshot on Spark local[{args.parallelism}]": lambda: snapshot(runner),
    }
    rates: dict[str, list[float]] = {label: [] for label in variants}
    for round_number in range(args.runs + 1):
        for label, action in variants.items():
            started = time.perf_counter()
            rows = action()
            if round_number:  # round 0 warms up: the JVM, pyarrow.compute's import, Delta's first write
                rates[label].append(rows / (time.perf_counter() - started))
    secrets.withdraw()
    plain, text, windows, single, parallel = (report(label, runs) for label, runs in rates.items())
    print(f"ratio windows / plain scan:              {windows / plain:.2f}")
    print(f"ratio windows / scan fetched as text:    {windows / text:.2f}")
    print(f"ratio snapshot (1 reader) / plain scan:  {single / plain:.2f}")
    print(f"parallel speedup (4 / 3):                {parallel / single:.2f}")
    print(f"load average at end: {load()}")


if __name__ == "__main__":
    main()
