#!/usr/bin/env python3
"""Snapshot through spark-submit: executors write the files vs rows funnelled through the driver,
on Spark local[2] and on a standalone cluster (two workers of one core each, executors in their own
JVMs), for two table sizes. Prints, per case, the median of ``--runs``: rows/s (application time,
without JVM start), the bytes the tasks sent to the driver and the driver's peak RSS.

    .venv/bin/python scripts/bench_snapshot_spark.py --dsn mysql://root@127.0.0.1:3306/ --rows 200000

Without ``--dsn`` a private MySQL sandbox is started. Figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from airflow_mysql_cdc.engine.snapshot.config import SnapshotConfig  # noqa: E402
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint  # noqa: E402
from tests.support.spark_cluster import SparkStandaloneCluster  # noqa: E402


def _load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def snapshot_application(
    endpoint: MySqlEndpoint, table: str, master: str, executor_writes: bool, workdir: Path, chunk_size: int
) -> dict:
    """One spark-submit of the snapshot application into a fresh lake; its result file."""
    config = SnapshotConfig(
        lake_root=str(workdir / "lake"),
        tables=(table,),
        chunk_size=chunk_size,
        executor_writes=executor_writes,
    )
    conf = ("spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1", "spark.executor.memory=768m")
    result, _ = _load_script("benchmarks").submit_application(
        endpoint, workdir, "snapshot_to_delta", config.to_json(), master, conf=conf
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", help="mysql://user:password@host:port/ (default: a private sandbox)")
    parser.add_argument("--rows", type=int, default=200_000, help="rows of the smaller table")
    parser.add_argument("--factor", type=int, default=4, help="the larger table has this many times the rows")
    parser.add_argument("--chunk-size", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    bench_snapshot = _load_script("bench_snapshot")
    sandbox = datadir = None
    if args.dsn:
        endpoint = MySqlEndpoint.from_url(args.dsn).with_database(None)
    else:
        sandbox = _load_script("mysql_sandbox")
        datadir = Path(tempfile.mkdtemp(prefix="bench-snapshot-spark-")) / "data"
        port = sandbox.free_port()
        sandbox.start(port=port, datadir=datadir, server_id=1, log=lambda _: None)
        endpoint = MySqlEndpoint("127.0.0.1", port, "root")
    workdir = Path(tempfile.mkdtemp(prefix="bench-snapshot-spark-work-"))
    cluster = SparkStandaloneCluster(workdir / "cluster").start()
    masters = {"local[2]": "local[2]", "standalone 2x1 core": cluster.master_url}
    print(f"load average before: {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs", flush=True)
    try:
        for rows in (args.rows, args.rows * args.factor):
            bench_snapshot.build(endpoint, rows)
            table = str(bench_snapshot.TABLE)
            for master_name, master in masters.items():
                for writes in (True, False):
                    results = [
                        snapshot_application(
                            endpoint, table, master, writes, workdir / "app", args.chunk_size
                        )
                        for _ in range(args.runs)
                    ]
                    rate = statistics.median(
                        r["tables"][0]["rows"] / r["tables"][0]["duration_s"] for r in results
                    )
                    sent = statistics.median(r["bytes_to_driver"] for r in results)
                    rss = max(r["driver_peak_rss_bytes"] for r in results) / 2**20
                    mode = "executors write" if writes else "rows to the driver"
                    print(
                        f"{rows:>9,} rows  {master_name:<20} {mode:<19} {rate:>9,.0f} rows/s  "
                        f"to driver {sent / 2**20:>8.2f} MiB  driver peak RSS {rss:>6,.0f} MiB",
                        flush=True,
                    )
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        if sandbox and datadir:
            sandbox.stop(datadir=datadir, log=lambda _: None)
            shutil.rmtree(datadir.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
