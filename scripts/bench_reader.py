#!/usr/bin/env python3
"""Rows per second of the engine's BinlogReader next to a bare BinLogStreamReader loop.

Both read the same binlog range in the same run: a mixed 10-column table receiving ``--rows`` row
changes (half inserts, 30% updates, 20% deletes, in transactions of ``--batch`` rows). Each reader
is timed ``--runs`` times, alternating, and the medians are printed with their ratio.

The bare loop is timed three ways: with the library defaults (what a naive consumer would write);
with the library settings the engine uses (``freeze_schema=True`` and table filters), the
like-for-like baseline of the headline ratio; and additionally with the engine's pause of the
cyclic garbage collector around each rows event, to show how much of the engine's speed comes from
that pause rather than from doing less work. Per row, the bare loop only touches ``event.rows``; the engine
additionally assembles transactions, normalises values to the canonical form of
``airflow_mysql_cdc.engine.mysql_types`` and tracks the position.

    .venv/bin/python scripts/bench_reader.py                       # private sandbox server
    .venv/bin/python scripts/bench_reader.py --dsn mysql://root@127.0.0.1:13306/ --rows 50000
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from airflow_mysql_cdc.engine.binlog_reader import BinlogReader  # noqa: E402
from airflow_mysql_cdc.engine.endpoint import MySqlEndpoint  # noqa: E402
from airflow_mysql_cdc.engine.gtid import GtidSet  # noqa: E402
from airflow_mysql_cdc.engine.stop_rules import UntilGtidSet  # noqa: E402

BARE_DEFAULTS = "bare loop, library defaults"
BARE_LIKE_ENGINE = "bare loop, engine's library settings"
BARE_LIKE_ENGINE_GC = "bare loop, engine's settings and GC pause"
ENGINE = "engine BinlogReader"
SCHEMA = "bench_reader"
TABLE = "mixed"
COLUMNS = """
    id BIGINT PRIMARY KEY, qty INT, code INT UNSIGNED, price DECIMAL(12,2), ratio DOUBLE,
    name VARCHAR(64), note TEXT, created DATETIME(6), updated TIMESTAMP(3) NULL, attrs JSON
"""


def _load_sandbox():
    spec = importlib.util.spec_from_file_location("mysql_sandbox", REPO_ROOT / "scripts" / "mysql_sandbox.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mysql_sandbox"] = module
    spec.loader.exec_module(module)
    return module


def _gtid_executed(endpoint: MySqlEndpoint) -> GtidSet:
    with endpoint.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT @@GLOBAL.gtid_executed")
        return GtidSet.parse(cursor.fetchone()[0])


def write_workload(endpoint: MySqlEndpoint, rows: int, batch: int) -> tuple[GtidSet, GtidSet]:
    """Create the table and write ``rows`` row changes; returns (start, end) GTID sets."""
    inserts, updates = rows // 2, rows * 3 // 10
    deletes = rows - inserts - updates
    with endpoint.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
        cursor.execute(f"CREATE DATABASE {SCHEMA}")
        cursor.execute(f"CREATE TABLE {SCHEMA}.{TABLE} ({COLUMNS})")
        cursor.execute("SET SESSION cte_max_recursion_depth = 10000000")
        cursor.execute("SELECT @@GLOBAL.gtid_executed")
        start = GtidSet.parse(cursor.fetchone()[0])
        for first in range(1, inserts + 1, batch):
            last = min(inserts, first + batch - 1)
            cursor.execute(
                f"""INSERT INTO {SCHEMA}.{TABLE}
                WITH RECURSIVE n (i) AS (SELECT {first} UNION ALL SELECT i + 1 FROM n WHERE i < {last})
                SELECT i, i % 1000, i * 7, i / 100, i / 3, CONCAT('name-', i), REPEAT('note ', 1 + i % 20),
                       NOW(6) - INTERVAL i SECOND, NOW(3), JSON_OBJECT('k', i, 'tags', JSON_ARRAY('a', i % 7))
                FROM n"""
            )
        for first in range(1, updates + 1, batch):
            last = min(updates, first + batch - 1)
            cursor.execute(
                f"UPDATE {SCHEMA}.{TABLE} SET qty = qty + 1, name = CONCAT(name, '!') "
                f"WHERE id BETWEEN {first} AND {last}"
            )
        for first in range(inserts - deletes + 1, inserts + 1, batch):
            last = min(inserts, first + batch - 1)
            cursor.execute(f"DELETE FROM {SCHEMA}.{TABLE} WHERE id BETWEEN {first} AND {last}")
    return start, _gtid_executed(endpoint)


def bare_loop(
    endpoint: MySqlEndpoint, start: GtidSet, *, engine_settings: bool, pause_gc: bool = False
) -> int:
    settings = endpoint.connection_kwargs()
    settings.pop("database", None)
    options = (
        {"freeze_schema": True, "only_schemas": [SCHEMA], "only_tables": [TABLE]} if engine_settings else {}
    )
    stream = BinLogStreamReader(
        connection_settings=settings,
        server_id=3_000_001,
        auto_position=start.to_replication_position(),
        blocking=False,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        **options,
    )
    count = 0
    try:
        for event in stream:
            if pause_gc:  # what the engine does around each rows event (see row_decoding.py)
                gc.disable()
                rows = event.rows
                gc.enable()
            else:
                rows = event.rows
            for _row in rows:
                count += 1
    finally:
        stream.close()
    return count


def engine_loop(endpoint: MySqlEndpoint, start: GtidSet, end: GtidSet) -> int:
    reader = BinlogReader(endpoint, tables=[f"{SCHEMA}.{TABLE}"], server_id=3_000_002)
    count = 0
    for transaction in reader.read(start, UntilGtidSet(end)):
        for _change in transaction.changes:
            count += 1
    return count


def timed(function: Callable[[], int]) -> tuple[int, float]:
    began = time.perf_counter()
    count = function()
    return count, time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", help="mysql://user:password@host:port/ (default: start a private sandbox)")
    parser.add_argument(
        "--rows", type=int, default=200_000, help="row changes in the workload (default 200000)"
    )
    parser.add_argument("--runs", type=int, default=3, help="timed runs per reader; medians are reported")
    parser.add_argument("--batch", type=int, default=1_000, help="rows per transaction (default 1000)")
    args = parser.parse_args(argv)

    sandbox = datadir = None
    if args.dsn:
        endpoint = MySqlEndpoint.from_url(args.dsn).with_database(None)
    else:
        sandbox = _load_sandbox()
        datadir = Path(tempfile.mkdtemp(prefix="bench-reader-")) / "data"
        port = sandbox.free_port()
        sandbox.start(port=port, datadir=datadir, server_id=1, log=lambda _: None)
        endpoint = MySqlEndpoint("127.0.0.1", port, "root")
    try:
        start, end = write_workload(endpoint, args.rows, args.batch)
        print(
            f"workload: {args.rows} row changes on {SCHEMA}.{TABLE} (10 columns), {(end - start).count()} "
            f"transactions, Python {sys.version.split()[0]}"
        )
        readers: dict[str, Callable[[], int]] = {
            BARE_DEFAULTS: lambda: bare_loop(endpoint, start, engine_settings=False),
            BARE_LIKE_ENGINE: lambda: bare_loop(endpoint, start, engine_settings=True),
            BARE_LIKE_ENGINE_GC: lambda: bare_loop(endpoint, start, engine_settings=True, pause_gc=True),
            ENGINE: lambda: engine_loop(endpoint, start, end),
        }
        seconds: dict[str, list[float]] = {name: [] for name in readers}
        for run in range(args.runs):
            order = list(readers) if run % 2 == 0 else list(reversed(readers))
            for name in order:
                count, elapsed = timed(readers[name])
                if count != args.rows:
                    raise SystemExit(f"{name} read {count} rows, expected {args.rows}")
                seconds[name].append(elapsed)
        rates = {name: args.rows / statistics.median(values) for name, values in seconds.items()}
        for name, rate in rates.items():
            runs = ", ".join(f"{args.rows / value:,.0f}" for value in seconds[name])
            print(f"{name:<44} {rate:>8,.0f} rows/s  (median of {args.runs}: {runs})")
        for baseline in (BARE_LIKE_ENGINE, BARE_DEFAULTS, BARE_LIKE_ENGINE_GC):
            print(f"ratio engine / {baseline + ':':<52} {rates[ENGINE] / rates[baseline]:.2f}")
    finally:
        if sandbox is not None:
            sandbox.stop(datadir=datadir, log=lambda _: None)
            shutil.rmtree(datadir.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
