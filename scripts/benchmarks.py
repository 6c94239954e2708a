#!/usr/bin/env python3
"""The benchmark suite: every throughput, latency and memory figure of the project in one run.

Starts a private MySQL 9.7 sandbox (or uses ``--dsn``), writes a workload of ``--rows`` row changes
on a mixed 10-column table (BIGINT key, INT, INT UNSIGNED, DECIMAL, DOUBLE, VARCHAR, BLOB,
DATETIME(6), TIMESTAMP(3), JSON: half inserts, 30% updates, 20% deletes, in multi-row transactions
of ``--batch`` rows) and prints, all measured in the same run, medians of ``--runs``:

1. a bare mysql-replication loop over the workload's binlog, rows/s (the baseline);
2. the engine's BinlogReader, rows/s and the ratio to 1; and the engine with its row images
   decoded by the library instead of the compiled per-table decoder (the decoder's gain);
3. binlog to Delta end to end through the Spark application (``spark-submit
   spark_apps/binlog_to_delta.py``), rows/s (application time, without JVM start) and the ratio
   to 1; then the same with parallel catch-up (``--catchup-parallelism K``, Spark ``local[K]``),
   the read phase alone (K range readers as Spark tasks next to one reader), and the engine's
   application call in this process, one reader next to K range readers whose Spark workers are
   already started (what a long catch-up sees, without the 2-3 s of cold Python workers);
4. snapshot rows/s next to a plain ``SELECT *`` scan (the snapshot code of ``scripts/bench_snapshot.py``);
5. live mode commit-to-Delta latency p50/p95 (one row every 100 ms): to the Delta commit that first
   holds each row (exact), and as a poller reading the table every 100 ms first saw it (as recorded
   before issue 36; the poll adds its own delay);
6. the peak resident memory of the application's Python driver (from its result file);
7. the lake's life (``scripts/bench_lake_life.py``): MERGE cost into 500k- and 5M-row targets after
   maintenance and after another writer's compaction, files per table after live batches and one
   maintenance run, catch-up rows/s with and without waves;
8. what the per-batch self-check of the lake costs (``scripts/bench_batch_check.py``): the
   aggregation of a 50,000-row batch and ``DeltaSink.apply_change_tables`` with and without it.

Each figure is printed with the machine's load average at that moment.

    .venv/bin/python scripts/benchmarks.py                      # 200k row changes, 3 runs
    .venv/bin/python scripts/benchmarks.py --rows 20000 --runs 1 --live-seconds 5     # a smoke run
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from airflow_mysql_cdc.engine.apply.config import ApplyConfig  # noqa: E402
from airflow_mysql_cdc.engine.apply.parallel_catchup import run_parallel_catchup  # noqa: E402
from airflow_mysql_cdc.engine.apply.range_reader import RangeTask, spark_range_runner  # noqa: E402
from airflow_mysql_cdc.engine.apply.single_reader import run_apply  # noqa: E402
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader  # noqa: E402
from airflow_mysql_cdc.engine.binlog.stop_rules import UntilGtidSet  # noqa: E402
from airflow_mysql_cdc.engine.lake.layout import LakeLayout  # noqa: E402
from airflow_mysql_cdc.engine.runtime.spark_tasks import SparkTasks  # noqa: E402
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint  # noqa: E402
from airflow_mysql_cdc.engine.values.gtid import GtidSet  # noqa: E402
from airflow_mysql_cdc.engine.values.gtid_ranges import split_segment  # noqa: E402

SCHEMA, TABLE = "bench", "mixed"
COLUMNS = """
    id BIGINT PRIMARY KEY, qty INT, code INT UNSIGNED, price DECIMAL(12,2), ratio DOUBLE,
    name VARCHAR(64), payload BLOB, created DATETIME(6), updated TIMESTAMP(3) NULL, attrs JSON
"""


def _load_script(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _executed(endpoint: MySqlEndpoint) -> GtidSet:
    with endpoint.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT @@GLOBAL.gtid_executed")
        return GtidSet.parse(cursor.fetchone()[0])


# --- the workload ------------------------------------------------------------------------------------


def write_workload(endpoint: MySqlEndpoint, rows: int, batch: int) -> tuple[GtidSet, GtidSet]:
    """Create the table and write ``rows`` row changes; returns the (start, end) GTID sets."""
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
                SELECT i, i % 1000, i * 7, i / 100, i / 3, CONCAT('name-', i), UNHEX(SHA2(i, 256)),
                       NOW(6) - INTERVAL i SECOND, NOW(3),
                       JSON_OBJECT('k', i, 'tags', JSON_ARRAY('a', i % 7), 'price', i / 100)
                FROM n"""
            )
        for first in range(1, updates + 1, batch):
            last = min(updates, first + batch - 1)
            cursor.execute(
                f"UPDATE {SCHEMA}.{TABLE} SET qty = qty + 1, name = CONCAT(name, '!'), "
                f"attrs = JSON_SET(attrs, '$.k', qty) WHERE id BETWEEN {first} AND {last}"
            )
        for first in range(inserts - deletes + 1, inserts + 1, batch):
            last = min(inserts, first + batch - 1)
            cursor.execute(f"DELETE FROM {SCHEMA}.{TABLE} WHERE id BETWEEN {first} AND {last}")
    return start, _executed(endpoint)


# --- 1 and 2: reading ------------------------------------------------------------------------------------


def bare_loop(endpoint: MySqlEndpoint, start: GtidSet) -> int:
    """mysql-replication alone, with the library settings the engine uses (like for like)."""
    settings = endpoint.connection_kwargs()
    settings.pop("database", None)
    stream = BinLogStreamReader(
        connection_settings=settings,
        server_id=3_000_101,
        auto_position=start.to_replication_position(),
        blocking=False,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        freeze_schema=True,
        only_schemas=[SCHEMA],
        only_tables=[TABLE],
    )
    count = 0
    try:
        for event in stream:
            for _row in event.rows:
                count += 1
    finally:
        stream.close()
    return count


def engine_loop(endpoint: MySqlEndpoint, start: GtidSet, end: GtidSet, compiled: bool = True) -> int:
    """The engine's reader; ``compiled=False`` decodes row images with the library (the old path)."""
    reader = BinlogReader(
        endpoint, tables=[f"{SCHEMA}.{TABLE}"], server_id=3_000_102, compiled_decoding=compiled
    )
    return sum(len(transaction.changes) for transaction in reader.read(start, UntilGtidSet(end)))


def range_read(
    runner, endpoint: MySqlEndpoint, start: GtidSet, end: GtidSet, parts: int, keep_changes: bool = True
) -> int:
    """The read phase of parallel catch-up: ``parts`` range readers as Spark tasks, results collected."""
    plan = split_segment(start, end, parts)
    tasks = [
        RangeTask(
            endpoint,
            (f"{SCHEMA}.{TABLE}",),
            index,
            str(plan.reader_start(index)),
            str(range_gtids),
            None,
            3_000_200 + index,
            keep_changes=keep_changes,
            columnar=True,
        )
        for index, range_gtids in enumerate(plan.ranges)
    ]
    results = runner(tasks)
    problems = [result.problem for result in results if result.problem]
    if problems:
        raise SystemExit(f"range readers failed: {problems}")
    return sum(result.rows for result in results)


# --- 3 and 6: the Spark application ----------------------------------------------------------------


def _bench_config(start: GtidSet, end: GtidSet, lake: Path) -> ApplyConfig:
    return ApplyConfig(
        pipeline_id="bench",
        lake_root=str(lake),
        tables=(f"{SCHEMA}.{TABLE}",),
        start_gtids=start,
        mode="until_gtid_set",
        target_gtids=end,
    )


def applied_in_process(
    endpoint: MySqlEndpoint, start: GtidSet, end: GtidSet, workdir: Path, runner=None, parallelism: int = 1
) -> Measured:
    """The application's engine call in this process, into a fresh lake: the single reader, or parallel
    catch-up with ``runner``'s Spark workers already started (no JVM or Python worker start-up)."""
    shutil.rmtree(workdir, ignore_errors=True)
    config = _bench_config(start, end, workdir / "lake")
    machine_before, own_before = machine_cpu_seconds(), time.process_time()
    if runner is None:
        result = run_apply(config, endpoint)
    else:
        result = run_parallel_catchup(config, endpoint, parallelism=parallelism, run_ranges=runner)
    own = time.process_time() - own_before
    return Measured(
        sum(result.rows_by_table.values()),
        result.duration_s,
        cpu_seconds=machine_cpu_seconds() - machine_before,
        own_cpu_seconds=own,
    )


def machine_cpu_seconds() -> float:
    """CPU time all cores spent busy since boot (``/proc/stat``: everything but idle and iowait)."""
    with open("/proc/stat") as stat:
        ticks = [int(field) for field in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def submit_application(
    endpoint: MySqlEndpoint,
    workdir: Path,
    application: str,
    config_json: str,
    master: str,
    extra_args: tuple[str, ...] = (),
    conf: tuple[str, ...] = (),
) -> tuple[dict, float]:
    """One spark-submit of ``spark_apps/<application>.py``: its result file and wall seconds."""
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    (workdir / "config.json").write_text(config_json)
    python = sys.executable
    environment = {
        **os.environ,
        **endpoint.to_environment(),
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        "PATH": str(Path(python).parent) + os.pathsep + os.environ.get("PATH", ""),
    }
    # The same entry point as spark_apps/<application>.py, under a name of its own: tests of other
    # checkouts on a shared machine kill -9 every process whose command line names binlog_to_delta.
    launcher = workdir / f"bench_{application}.py"
    launcher.write_text((REPO_ROOT / "spark_apps" / f"{application}.py").read_text())
    settings = [
        part for setting in ("spark.ui.showConsoleProgress=false", *conf) for part in ("--conf", setting)
    ]
    argv = [
        "spark-submit", "--master", master, *settings, str(launcher),
        "--config", str(workdir / "config.json"), "--result-file", str(workdir / "result.json"), *extra_args,
    ]  # fmt: skip
    began = time.perf_counter()
    completed = subprocess.run(argv, env=environment, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    if completed.returncode != 0:
        raise SystemExit(
            f"spark-submit failed ({completed.returncode}):\n"
            f"{completed.stdout[-2000:]}{completed.stderr[-3000:]}"
        )
    return json.loads((workdir / "result.json").read_text()), wall


def spark_application(
    endpoint: MySqlEndpoint, start: GtidSet, end: GtidSet, workdir: Path, parallelism: int
) -> Measured:
    """One spark-submit run into a fresh lake: application seconds (no JVM start), wall, driver RSS."""
    config = _bench_config(start, end, workdir / "lake")
    result, wall = submit_application(
        endpoint, workdir, "binlog_to_delta", config.to_json(), f"local[{max(parallelism, 2)}]",
        ("--catchup-parallelism", str(parallelism)),
    )  # fmt: skip
    rows = sum(result["rows_by_table"].values())
    return Measured(rows, result["duration_s"], wall, result["driver_peak_rss_bytes"])


# --- 4: snapshot -----------------------------------------------------------------------------------------


def snapshot_rates(endpoint: MySqlEndpoint, rows: int, runs: int, chunk_size: int) -> tuple[float, float]:
    """(plain scan rows/s, snapshot to Delta with one reader rows/s), medians, via bench_snapshot."""
    bench_snapshot = _load_script("bench_snapshot")
    from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
    from airflow_mysql_cdc.engine.snapshot.window_task import run_sequentially

    bench_snapshot.build(endpoint, rows)
    lake = Path(tempfile.mkdtemp(prefix="bench-suite-snapshot-"))
    plain, snapshot = [], []
    try:
        for _ in range(runs):
            began = time.perf_counter()
            count = bench_snapshot.plain_scan(endpoint)
            plain.append(count / (time.perf_counter() - began))
            began = time.perf_counter()
            result = snapshot_table(
                endpoint,
                lake,
                str(bench_snapshot.TABLE),
                chunk_size=chunk_size,
                run_windows=run_sequentially,
                restart=True,
            )
            snapshot.append(result.rows / (time.perf_counter() - began))
    finally:
        shutil.rmtree(lake, ignore_errors=True)
    return statistics.median(plain), statistics.median(snapshot)


# --- 5: live latency -----------------------------------------------------------------------------------


@dataclass
class LiveLatencies:
    """Per row, seconds from its commit in MySQL to its visibility in the Delta target, two ways."""

    exact: list[float]
    """To the Delta commit that first holds the row (that commit's timestamp, this host's clock)."""
    polled: list[float]
    """To the first of the poller's reads (every 100 ms, plus the read) that saw it: figure 5 as
    recorded before issue 36, which adds the poll's own delay (about 65 ms on average) to each row."""


def live_latencies(endpoint: MySqlEndpoint, seconds: float, interval: float = 0.1) -> LiveLatencies:
    """Each row's commit-to-Delta latency (:class:`LiveLatencies`), one row committed every ``interval``."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    with endpoint.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE {SCHEMA}.events (id INT PRIMARY KEY, payload VARCHAR(100))")
    lake = Path(tempfile.mkdtemp(prefix="bench-suite-live-"))
    config = ApplyConfig(
        pipeline_id="live",
        lake_root=str(lake),
        tables=(f"{SCHEMA}.events",),
        start_gtids=_executed(endpoint),
        mode="live",
    )
    stop = threading.Event()
    applier = threading.Thread(target=run_apply, args=(config, endpoint), kwargs={"stop_requested": stop})
    applier.start()
    committed: dict[int, float] = {}
    seen: dict[int, float] = {}

    def write() -> None:
        with endpoint.connect() as connection, connection.cursor() as cursor:
            deadline = time.monotonic() + seconds
            row_id = 0
            while time.monotonic() < deadline:
                row_id += 1
                cursor.execute(f"INSERT INTO {SCHEMA}.events VALUES (%s, 'x')", (row_id,))
                committed[row_id] = time.time()
                time.sleep(interval)

    writer = threading.Thread(target=write)
    writer.start()
    target = str(LakeLayout(lake).target(SCHEMA, "events"))
    try:
        while writer.is_alive() or len(seen) < len(committed):
            time.sleep(0.1)
            try:
                ids = DeltaTable(target).to_pyarrow_table(columns=["id"])["id"].to_pylist()
            except TableNotFoundError:
                continue
            now = time.time()
            for row_id in ids:
                seen.setdefault(row_id, now)
            if not writer.is_alive() and time.time() - max(committed.values()) > 30:
                break
        visible = _first_commit_holding_each_row(target)
    finally:
        stop.set()
        applier.join()
        shutil.rmtree(lake, ignore_errors=True)
    return LiveLatencies(
        exact=[visible[i] - committed[i] for i in committed if i in visible],
        polled=[seen[i] - committed[i] for i in committed if i in seen],
    )


def _first_commit_holding_each_row(target: str) -> dict[int, float]:
    """Each row id of the Delta table at ``target``: the timestamp of the first version that holds it."""
    from deltalake import DeltaTable

    stamps = {entry["version"]: entry["timestamp"] / 1000 for entry in DeltaTable(target).history()}
    visible: dict[int, float] = {}
    for version in sorted(stamps):
        table = DeltaTable(target, version=version)
        for row_id in table.to_pyarrow_table(columns=["id"])["id"].to_pylist():
            visible.setdefault(row_id, stamps[version])
    return visible


def spread(latencies: list[float]) -> str:
    """p50, p95 and max of a list of latencies in seconds, as figure 5 prints them."""
    return (
        f"p50 {statistics.median(latencies):.2f}s, p95 {percentile(latencies, 0.95):.2f}s, "
        f"max {max(latencies):.2f}s"
    )


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


# --- the run -----------------------------------------------------------------------------------------------


@dataclass
class Measured:
    rows: int
    seconds: float
    wall_seconds: float = 0.0
    driver_rss_bytes: int = 0
    cpu_seconds: float = 0.0  # the whole machine's, while it ran
    own_cpu_seconds: float = 0.0  # this process's (its threads; not the JVM, workers or mysqld)

    @property
    def rate(self) -> float:
        return self.rows / self.seconds


def _timed(action: Callable[[], int]) -> Callable[[], Measured]:
    def run() -> Measured:
        began = time.perf_counter()
        rows = action()
        return Measured(rows, time.perf_counter() - began)

    return run


def interleaved(
    rows: int, runs: int, actions: dict[str, Callable[[], Measured]]
) -> dict[str, list[Measured]]:
    """Every action ``runs`` times, alternating the order, so load changes hit all of them alike."""
    results: dict[str, list[Measured]] = {name: [] for name in actions}
    for run in range(runs):
        for name in list(actions) if run % 2 == 0 else list(reversed(actions)):
            gc.collect()
            measured = actions[name]()
            if measured.rows != rows:
                raise SystemExit(f"{name}: {measured.rows} rows, expected {rows}")
            results[name].append(measured)
    return results


def report(label: str, measured: list[Measured], baseline: float | None = None, against: str = "1") -> float:
    """Print the median rate of ``measured`` (and its ratio to ``baseline``); returns the median."""
    rates = [m.rate for m in measured]
    rate = statistics.median(rates)
    ratio = f"  ratio to {against}: {rate / baseline:.2f}" if baseline else ""
    print(
        f"{label:<56} {rate:>8,.0f} rows/s (runs: {', '.join(f'{r:,.0f}' for r in rates)}){ratio}  "
        f"[{machine_load()}]",
        flush=True,
    )
    return rate


def machine_load() -> str:
    """The 1-minute load average now, printed beside each figure (the machine is shared)."""
    return f"load {os.getloadavg()[0]:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", help="mysql://user:password@host:port/ (default: start a private sandbox)")
    parser.add_argument("--rows", type=int, default=200_000, help="row changes in the binlog workload")
    parser.add_argument("--batch", type=int, default=1_000, help="rows per transaction")
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement; medians are printed")
    parser.add_argument("--parallelism", type=int, default=2, help="range readers for parallel catch-up")
    parser.add_argument("--snapshot-rows", type=int, default=100_000)
    parser.add_argument("--live-seconds", type=float, default=20.0)
    parser.add_argument(
        "--skip",
        default="",
        help="comma-separated sections to skip: read,apps,phases,snapshot,live,lake,check",
    )
    lake_life = _load_script("bench_lake_life")
    lake_life.add_arguments(parser)
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    # Stopped with SIGTERM, still stop the private server (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sandbox = datadir = None
    if args.dsn:
        endpoint = MySqlEndpoint.from_url(args.dsn).with_database(None)
    else:
        sandbox = _load_script("mysql_sandbox")
        datadir = Path(tempfile.mkdtemp(prefix="bench-suite-")) / "data"
        port = sandbox.free_port()
        sandbox.start(port=port, datadir=datadir, server_id=1, log=lambda _: None)
        endpoint = MySqlEndpoint("127.0.0.1", port, "root")
    workdir = Path(tempfile.mkdtemp(prefix="bench-suite-work-"))
    try:
        print(
            f"load average before: {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs, "
            f"Python {sys.version.split()[0]}"
        )
        start, end = write_workload(endpoint, args.rows, args.batch)
        rows, runs, k = args.rows, args.runs, args.parallelism
        print(
            f"workload: {rows:,} row changes on {SCHEMA}.{TABLE} (10 columns), "
            f"{(end - start).count()} transactions"
        )
        bare: float | None = None
        if "read" not in skip:
            read = interleaved(
                rows,
                runs,
                {
                    "bare": _timed(lambda: bare_loop(endpoint, start)),
                    "engine": _timed(lambda: engine_loop(endpoint, start, end)),
                    "library": _timed(lambda: engine_loop(endpoint, start, end, compiled=False)),
                },
            )
            bare = report("1. bare mysql-replication loop", read["bare"])
            report("2. engine BinlogReader", read["engine"], bare)
            report("   engine, row images decoded by the library", read["library"], bare)
        if "apps" not in skip:
            apps = interleaved(
                rows,
                runs,
                {
                    "single": lambda: spark_application(endpoint, start, end, workdir / "app", 1),
                    "parallel": lambda: spark_application(endpoint, start, end, workdir / "app", k),
                },
            )
            single = report("3. binlog to Delta through spark-submit, 1 reader", apps["single"], bare)
            report(f"   the same with parallel catch-up, k={k}", apps["parallel"], bare)
            print(
                f"   parallel catch-up speed-up k={k} / 1 reader: "
                f"{statistics.median(m.rate for m in apps['parallel']) / single:.2f}"
            )
            for name, label in (("single", "1 reader"), ("parallel", f"k={k}")):
                wall = statistics.median(m.rows / m.wall_seconds for m in apps[name])
                peak = max(m.driver_rss_bytes for m in apps[name]) / 2**20
                print(
                    f"   {label}: {wall:,.0f} rows/s with JVM and Spark start-up; "
                    f"6. driver peak RSS {peak:,.0f} MiB",
                    flush=True,
                )
        if "phases" not in skip:
            from pyspark.sql import SparkSession

            spark = SparkSession.builder.master(f"local[{k}]").appName("bench-range-read").getOrCreate()
            spark.sparkContext.setLogLevel("ERROR")
            runner = spark_range_runner(SparkTasks(spark.sparkContext))
            phase = interleaved(
                rows,
                runs,
                {
                    "one": _timed(lambda: range_read(runner, endpoint, start, end, 1)),
                    "many": _timed(lambda: range_read(runner, endpoint, start, end, k)),
                },
            )
            one = report("   read phase only: 1 range reader (a Spark task)", phase["one"])
            report(
                f"   read phase only: {k} range readers (local[{k}])", phase["many"], one, "1 range reader"
            )
            decode = interleaved(
                rows,
                runs,
                {
                    "one": _timed(lambda: range_read(runner, endpoint, start, end, 1, keep_changes=False)),
                    "many": _timed(lambda: range_read(runner, endpoint, start, end, k, keep_changes=False)),
                },
            )
            one = report("   decoding only, nothing shipped back: 1 range reader", decode["one"])
            report(f"   decoding only, nothing shipped back: {k} readers", decode["many"], one, "1 reader")
            warm = interleaved(
                rows,
                runs,
                {
                    "single": lambda: applied_in_process(endpoint, start, end, workdir / "warm"),
                    "parallel": lambda: applied_in_process(endpoint, start, end, workdir / "warm", runner, k),
                },
            )
            one = report("   end to end in one process: 1 reader", warm["single"], bare)
            report(
                f"   end to end in one process: k={k}, Spark workers started",
                warm["parallel"],
                one,
                "1 reader",
            )
            for name, label in (("single", "1 reader"), ("parallel", f"k={k}")):
                cpu = statistics.median(m.cpu_seconds for m in warm[name])
                own = statistics.median(m.own_cpu_seconds for m in warm[name])
                busy = statistics.median(m.cpu_seconds / m.seconds for m in warm[name])
                print(
                    f"   {label}: machine CPU {cpu:.2f} s ({busy:.2f} cores busy), of which this "
                    f"process {own:.2f} s",
                    flush=True,
                )
            spark.stop()
        if "snapshot" not in skip:
            plain, snapshot = snapshot_rates(endpoint, args.snapshot_rows, runs, 20_000)
            print(f"{'4. plain SELECT * scan (' + f'{args.snapshot_rows:,} rows)':<58} {plain:>9,.0f} rows/s")
            print(
                f"{'   snapshot to Delta, 1 reader':<58} {snapshot:>9,.0f} rows/s  "
                f"ratio to scan: {snapshot / plain:.2f}  [{machine_load()}]"
            )
        if "live" not in skip:
            live = live_latencies(endpoint, args.live_seconds)
            print(
                f"5. live commit-to-Delta latency over {len(live.exact)} rows: {spread(live.exact)} "
                f"(to the Delta commit holding each row); polled every 100 ms as recorded before: "
                f"{spread(live.polled)}  [{machine_load()}]"
            )
        if "check" not in skip:
            bench_batch_check = _load_script("bench_batch_check")
            print(f"8. the per-batch self-check of the lake, with and without it  [{machine_load()}]")
            bench_batch_check.measure_aggregation(50_000, 5)
            bench_batch_check.measure_sink(50_000, 4, 200_000)
        if "lake" not in skip:
            lake_life.run(endpoint, args)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if sandbox is not None:
            sandbox.stop(datadir=datadir, log=lambda _: None)
            shutil.rmtree(datadir.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
