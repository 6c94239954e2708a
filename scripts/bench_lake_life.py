#!/usr/bin/env python3
"""Section 7 of the benchmark suite: what a long-lived lake costs. Every figure is a ratio within one run.

7a. **Merges that cost what they change.** The same 100,000 row changes are applied through the
    binlog application (in this process, ``run_apply``) into targets of ``--small`` and ``--large``
    rows, once as updates of keys in the most recent range (as OLTP updates mostly are) and once
    spread uniformly over the key space; each target first snapshotted, then maintained by the
    built-in maintenance, and measured twice: as the maintenance left it, and after another writer's
    ``optimize.compact()`` with no arguments. Prints seconds, the ratio large/small, and the files
    each MERGE rewrote (delta-rs's ``num_target_files_removed``). ``7a-unsigned`` does the same with
    BIGINT UNSIGNED keys near 2^64: a decimal(20,0) in the lake, whose statistics delta-rs cannot
    write exactly, so its MERGEs read every file (engine/lake/file_statistics.py).
7b. **Files per table** after ``--live-batches`` live micro-batches (one transaction each, two
    tables), then after one maintenance run; and the bound maintenance keeps.
7c. **Catch-up waves.** A backlog of ``--backlog`` row changes on 5 tables applied by the single
    reader with a MERGE per micro-batch (``wave_max_rows`` 1: the behaviour before waves) and with
    waves (the default): rows/s of each and the ratio.

    .venv/bin/python scripts/bench_lake_life.py                 # the defaults: 500k/5M, 1,000 batches, 1M
    .venv/bin/python scripts/bench_lake_life.py --small 50000 --large 500000 \
        --live-batches 100 --backlog 100000                    # a smoke run
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from deltalake import DeltaTable  # noqa: E402

from airflow_mysql_cdc.engine.apply.config import ApplyConfig  # noqa: E402
from airflow_mysql_cdc.engine.apply.opening import delta_sink  # noqa: E402
from airflow_mysql_cdc.engine.apply.single_reader import run_apply  # noqa: E402
from airflow_mysql_cdc.engine.binlog.changes import Op, RowChange, TableShape, Transaction  # noqa: E402
from airflow_mysql_cdc.engine.lake.delta_sink import DeltaSink  # noqa: E402
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy  # noqa: E402
from airflow_mysql_cdc.engine.lake.maintenance.run import maintain_lake  # noqa: E402
from airflow_mysql_cdc.engine.lake.state.store import LakeState  # noqa: E402
from airflow_mysql_cdc.engine.mysql.types import ColumnType  # noqa: E402
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table  # noqa: E402
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint  # noqa: E402
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet  # noqa: E402

SCHEMA = "bench_life"
COLUMNS = "id {key} PRIMARY KEY, qty INT, name VARCHAR(40), amount DECIMAL(12,2), updated DATETIME(6)"
KEYS = {"bigint": ("BIGINT", 0), "unsigned": ("BIGINT UNSIGNED", 2**64 - 10**8)}
"""7a's key: its MySQL type and the first key's offset (BIGINT UNSIGNED keys near 2^64, as hashed,
``UUID_SHORT()`` and snowflake ids are: a decimal(20,0) in the lake, with no statistics)."""
MAINTAINED = MaintenancePolicy(small_files=2)


def _executed(endpoint: MySqlEndpoint) -> GtidSet:
    with endpoint.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT @@GLOBAL.gtid_executed")
        return GtidSet.parse(cursor.fetchone()[0])


def _run(endpoint: MySqlEndpoint, sql: list[str]) -> None:
    with endpoint.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SET SESSION cte_max_recursion_depth = 10000000")
        for statement in sql:
            cursor.execute(statement)


def _fill(endpoint: MySqlEndpoint, table: str, rows: int, key: str = "bigint") -> None:
    mysql_type, offset = KEYS[key]
    statements = [
        f"DROP TABLE IF EXISTS {SCHEMA}.{table}",
        f"CREATE TABLE {SCHEMA}.{table} ({COLUMNS.format(key=mysql_type)})",
    ]
    for first in range(1, rows + 1, 100_000):
        last = min(rows, first + 99_999)
        statements.append(
            f"INSERT INTO {SCHEMA}.{table} WITH RECURSIVE n (i) AS (SELECT {first} UNION ALL "
            f"SELECT i + 1 FROM n WHERE i < {last}) SELECT i + {offset}, i % 1000, CONCAT('name-', i), "
            "i / 100, NOW(6) FROM n"
        )
    _run(endpoint, statements)


def _config(lake: Path, tables: tuple[str, ...], start: GtidSet, end: GtidSet, **settings) -> ApplyConfig:
    return ApplyConfig(
        pipeline_id="life", lake_root=str(lake), tables=tables, start_gtids=start,
        mode="until_gtid_set", target_gtids=end, **settings,
    )  # fmt: skip


def _apply(endpoint: MySqlEndpoint, config: ApplyConfig) -> tuple[float, list[dict]]:
    sink = delta_sink(config, config.lake_state())
    started = time.monotonic()
    run_apply(config, endpoint, sink=sink)
    return time.monotonic() - started, list(sink.merge_metrics)


# --- 7a ---------------------------------------------------------------------------------------------


def merge_cost(
    endpoint: MySqlEndpoint, workdir: Path, small: int, large: int, changes: int, key: str = "bigint"
) -> None:
    _run(endpoint, [f"CREATE DATABASE IF NOT EXISTS {SCHEMA}"])
    offset = KEYS[key][1]
    print(f"   key: {KEYS[key][0]}" + (f", from {offset:,} on" if offset else ""), flush=True)
    results: dict[tuple[str, str, int], tuple[float, list[int]]] = {}
    for size in (small, large):
        table = f"t{size}" + ("" if key == "bigint" else f"_{key}")
        name = f"{SCHEMA}.{table}"
        _fill(endpoint, table, size, key)
        base = workdir / f"base-{size}-{key}"
        snapshot = snapshot_table(endpoint, base, name, chunk_size=100_000)
        start = _executed(endpoint)
        run_apply(_config(base, (name,), snapshot.stream_start, start), endpoint)
        report = maintain_lake(LakeState(base, "life"), (name,), MAINTAINED, force=True)
        target = next(t for t in report.tables if t.role == "target")
        print(
            f"   {size:,}-row target after the built-in maintenance: {target.files_after} files", flush=True
        )
        recent = _updates(endpoint, table, range(offset + size - changes + 1, offset + size + 1))
        keys = random.Random(size).sample(range(offset + 1, offset + size + 1), changes)
        uniform = _updates(endpoint, table, keys)
        for layout in ("maintained", "compacted"):
            lake = workdir / f"{layout}-{size}-{key}"
            shutil.copytree(base, lake)
            path = LakeState(lake, "life").layout.target(SCHEMA, table)
            if layout == "compacted":
                DeltaTable(path).optimize.compact()  # another writer's OPTIMIZE with Delta's defaults
            files = len(DeltaTable(path).file_uris())
            position = start
            for pattern, (first, last) in (("recent", recent), ("uniform", uniform)):
                assert position == first, "the patterns are applied in binlog order"
                seconds, metrics = _apply(endpoint, _config(lake, (name,), position, last))
                rewritten = [int(m.get("num_target_files_removed", 0)) for m in metrics]
                results[(layout, pattern, size)] = (seconds, rewritten)
                print(
                    f"   {layout:<10} {pattern:<8} {size:>9,} rows ({files} files): {seconds:6.2f} s, "
                    f"files rewritten per MERGE {rewritten}",
                    flush=True,
                )
                position = last
            shutil.rmtree(lake, ignore_errors=True)
    for layout in ("maintained", "compacted"):
        for pattern in ("recent", "uniform"):
            ratio = results[(layout, pattern, large)][0] / results[(layout, pattern, small)][0]
            print(
                f"7a. {changes:,} changes, {pattern:<7} keys, {layout:<10}: {large:,}/{small:,} = {ratio:.2f}"
                + (f" ({KEYS[key][0]})" if key != "bigint" else "")
            )


def _updates(endpoint: MySqlEndpoint, table: str, keys) -> tuple[GtidSet, GtidSet]:
    """Update ``keys`` (1,000 per transaction); returns the GTID sets before and after."""
    keys = list(keys)
    before = _executed(endpoint)
    statements = []
    for first in range(0, len(keys), 1000):
        chunk = keys[first : first + 1000]
        if chunk == list(range(chunk[0], chunk[0] + len(chunk))):
            where = f"id BETWEEN {chunk[0]} AND {chunk[-1]}"
        else:
            where = f"id IN ({', '.join(map(str, chunk))})"
        statements.append(f"UPDATE {SCHEMA}.{table} SET qty = qty + 1, updated = NOW(6) WHERE {where}")
    _run(endpoint, statements)
    return before, _executed(endpoint)


# --- 7b ---------------------------------------------------------------------------------------------

_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
_ORDERS = TableShape(
    "shop",
    "orders",
    (ColumnType("id", "int", bits=64), ColumnType("status", "text"), ColumnType("qty", "int", bits=32)),
    ("id",),
)
_ITEMS = TableShape("shop", "items", (ColumnType("sku", "text"), ColumnType("price", "double")), ("sku",))


def files_after_live_batches(workdir: Path, batches: int) -> None:
    lake = workdir / "live"
    sink = DeltaSink.at(lake, "life", tables=("shop.orders", "shop.items"))
    sink.open(GtidSet())
    started = time.monotonic()
    for number in range(1, batches + 1):
        now_us = time.time_ns() // 1000
        changes = [
            RowChange(_ORDERS, Op.INSERT, None, {"id": number, "status": "new", "qty": number}, (number,))
        ]
        if number > 10:
            old = number - 10
            changes.append(
                RowChange(_ORDERS, Op.UPDATE, {"id": old}, {"id": old, "status": "paid", "qty": old}, (old,))
            )
        changes.append(
            RowChange(_ITEMS, Op.INSERT, None, {"sku": f"s{number}", "price": 1.5}, (f"s{number}",))
        )
        sink.apply(
            [Transaction(Gtid(_UUID, number), now_us, tuple(changes))], GtidSet.parse(f"{_UUID}:1-{number}")
        )
    sink.release()
    elapsed = time.monotonic() - started
    before = _file_counts(lake)
    report = maintain_lake(
        LakeState(lake, "life"), ("shop.orders", "shop.items"), MaintenancePolicy(), force=True
    )
    after = _file_counts(lake)
    print(
        f"7b. {batches:,} live micro-batches in {elapsed:.0f} s, "
        f"then one maintenance run ({report.seconds:.1f} s):"
    )
    for name in sorted(after):
        data, logs = before.get(name, (0, 0))
        print(f"   {name:<34} data files {data:>5} -> {after[name][0]:>3}, "
              f"log files {logs:>5} -> {after[name][1]:>3}")  # fmt: skip
    print(
        "   bound after maintenance: a target ceil(size / delta.targetFileSize) files, a changelog one per "
        "day (today's too), each own table one file; logs: 1 checkpoint plus the commits younger than "
        "delta.logRetentionDuration (30 days; 1 hour for _cdc tables)"
    )


def _file_counts(lake: Path) -> dict[str, tuple[int, int]]:
    counts = {}
    for log in sorted(lake.rglob("_delta_log")):
        table = log.parent
        data = len(DeltaTable(str(table)).file_uris())
        counts[str(table.relative_to(lake))] = (data, sum(1 for _ in log.iterdir()))
    return counts


# --- 7c ---------------------------------------------------------------------------------------------


def catch_up_waves(endpoint: MySqlEndpoint, workdir: Path, backlog: int, runs: int) -> None:
    _run(endpoint, [f"CREATE DATABASE IF NOT EXISTS {SCHEMA}"])
    tables = tuple(f"w{number}" for number in range(1, 6))
    for table in tables:
        _fill(endpoint, table, 20_000)
    base = workdir / "waves"
    names = tuple(f"{SCHEMA}.{table}" for table in tables)
    starts = [snapshot_table(endpoint, base, name, chunk_size=50_000).stream_start for name in names]
    start = starts[0]
    for other in starts[1:]:
        start &= other
    position = _executed(endpoint)
    run_apply(_config(base, names, start, position), endpoint)
    per_table, statements = backlog // len(tables), []
    for index, table in enumerate(tables):  # 40% updates of existing rows, 40% inserts, 20% other updates
        rng = random.Random(index)
        for _ in range(per_table // 1000):
            kind = rng.random()
            low = rng.randint(1, 20_000 - 1000)
            if kind < 0.4:
                statements.append(
                    f"UPDATE {SCHEMA}.{table} SET qty = qty + 1 WHERE id BETWEEN {low} AND {low + 999}"
                )
            elif kind < 0.8:
                first = 1_000_000 + len(statements) * 1000
                statements.append(
                    f"INSERT INTO {SCHEMA}.{table} WITH RECURSIVE n (i) AS (SELECT {first} UNION ALL "
                    f"SELECT i + 1 FROM n WHERE i < {first + 999}) SELECT i, 1, 'new', 1.5, NOW(6) FROM n"
                )
            else:
                statements.append(
                    f"UPDATE {SCHEMA}.{table} SET name = 'x' WHERE id BETWEEN {low} AND {low + 999}"
                )
    _run(endpoint, statements)
    end = _executed(endpoint)
    rates: dict[str, list[float]] = {"per batch": [], "waves": []}
    for _ in range(runs):
        for label, settings in (("per batch", {"wave_max_rows": 1}), ("waves", {})):
            lake = workdir / "waves-run"
            shutil.copytree(base, lake)
            seconds, _ = _apply(endpoint, _config(lake, names, position, end, **settings))
            rates[label].append(backlog / seconds)
            shutil.rmtree(lake, ignore_errors=True)
    before, after = statistics.median(rates["per batch"]), statistics.median(rates["waves"])
    print(
        f"7c. catch-up of {backlog:,} row changes on 5 tables, 1 reader: a MERGE per 50,000-row batch "
        f"{before:,.0f} rows/s; waves {after:,.0f} rows/s; ratio {after / before:.2f}"
    )


def run(endpoint: MySqlEndpoint, args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-lake-life-"))
    try:
        print(f"7. the lake's life (load average {os.getloadavg()[0]:.2f})", flush=True)
        sections = set(args.lake_sections.split(","))
        if "7a" in sections:
            merge_cost(endpoint, workdir, args.small, args.large, args.changes)
        if "7a-unsigned" in sections:  # what exact statistics cost a key delta-rs keeps none for
            merge_cost(endpoint, workdir, args.small, args.large, args.changes, key="unsigned")
        if "7b" in sections:
            files_after_live_batches(workdir, args.live_batches)
        if "7c" in sections:
            catch_up_waves(endpoint, workdir, args.backlog, args.runs)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--small", type=int, default=500_000, help="7a: rows of the smaller target")
    parser.add_argument("--large", type=int, default=5_000_000, help="7a: rows of the larger target")
    parser.add_argument("--changes", type=int, default=100_000, help="7a: row changes applied")
    parser.add_argument("--live-batches", type=int, default=1_000, help="7b: live micro-batches")
    parser.add_argument("--backlog", type=int, default=1_000_000, help="7c: row changes of the catch-up")
    parser.add_argument(
        "--lake-sections", default="7a,7a-unsigned,7b,7c", help="which parts of section 7 to run"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", required=True, help="mysql://user:password@host:port/")
    parser.add_argument("--runs", type=int, default=1)
    add_arguments(parser)
    args = parser.parse_args()
    run(MySqlEndpoint.from_url(args.dsn).with_database(None), args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
