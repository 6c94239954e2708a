"""Live mode: how long until a row committed in MySQL is visible in the Delta target table.

A writer commits one row every ``--interval`` seconds and records when each commit returned; a
poller reads the Delta table every 100 ms and records when each row first appears. Prints
p50/p95/max of (seen - committed) for the default live configuration. Usage (sandbox running):

    .venv/bin/python scripts/bench_live_latency.py --seconds 30
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from airflow_mysql_cdc.engine.apply_config import ApplyConfig  # noqa: E402
from airflow_mysql_cdc.engine.apply_loop import run_apply  # noqa: E402
from airflow_mysql_cdc.engine.endpoint import MySqlEndpoint  # noqa: E402
from airflow_mysql_cdc.engine.sinks.delta_layout import LakeLayout  # noqa: E402


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default="mysql://root@127.0.0.1:13306/")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=0.1)
    args = parser.parse_args()
    endpoint = MySqlEndpoint.from_url(args.dsn).with_database(None)
    with endpoint.connect() as connection, connection.cursor() as cursor:
        cursor.execute("DROP DATABASE IF EXISTS bench_latency")
        cursor.execute("CREATE DATABASE bench_latency")
        cursor.execute("CREATE TABLE bench_latency.events (id INT PRIMARY KEY, payload VARCHAR(100))")
        cursor.execute("SELECT @@gtid_executed")
        start = cursor.fetchone()[0]
    lake = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    config = ApplyConfig(pipeline_id="latency", lake_root=str(lake), tables=("bench_latency.events",),
                         start_gtids=start, mode="live")  # fmt: skip
    stop = threading.Event()
    applier = threading.Thread(target=run_apply, args=(config, endpoint), kwargs={"stop_requested": stop})
    applier.start()
    committed: dict[int, float] = {}
    seen: dict[int, float] = {}

    def write() -> None:
        with endpoint.connect() as connection, connection.cursor() as cursor:
            row_id = 0
            deadline = time.monotonic() + args.seconds
            while time.monotonic() < deadline:
                row_id += 1
                cursor.execute("INSERT INTO bench_latency.events VALUES (%s, 'x')", (row_id,))
                committed[row_id] = time.time()
                time.sleep(args.interval)

    writer = threading.Thread(target=write)
    writer.start()
    target = str(LakeLayout(lake).target("bench_latency", "events"))
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
    stop.set()
    applier.join()
    latencies = [seen[i] - committed[i] for i in committed if i in seen]
    print(f"rows committed: {len(committed)}, seen in Delta: {len(latencies)}")
    print(
        f"commit-to-Delta latency: p50 {statistics.median(latencies):.2f}s, "
        f"p95 {percentile(latencies, 0.95):.2f}s, max {max(latencies):.2f}s "
        f"(batch_max_seconds={config.batch_max_seconds}, heartbeat_s={config.heartbeat_s})"
    )


if __name__ == "__main__":
    main()
