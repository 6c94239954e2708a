"""Live mode: how long until a row committed in MySQL is visible in the Delta target table.

Figure 5 of the benchmark suite on its own (``scripts/benchmarks.py`` measures it the same way): a
writer commits one row every ``--interval`` seconds and records when each commit returned; a
poller reads the Delta table every 100 ms and records when each row first appears. Prints
p50/p95/max of (seen - committed) for the default live configuration. Usage (sandbox running):

    .venv/bin/python scripts/bench_live_latency.py --seconds 30
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import benchmarks  # noqa: E402

from airflow_mysql_cdc.engine.apply.config import ApplyConfig  # noqa: E402
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default="mysql://root@127.0.0.1:13306/")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=0.1)
    args = parser.parse_args()
    endpoint = MySqlEndpoint.from_url(args.dsn).with_database(None)
    with endpoint.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {benchmarks.SCHEMA}")
        cursor.execute(f"CREATE DATABASE {benchmarks.SCHEMA}")
    live = benchmarks.live_latencies(endpoint, args.seconds, args.interval)
    defaults = ApplyConfig(pipeline_id="live", lake_root="", tables=("x.y",))
    print(f"rows seen in Delta: {len(live.exact)}")
    for name, latencies in (("to the Delta commit", live.exact), ("polled every 100 ms", live.polled)):
        print(
            f"commit-to-Delta latency ({name}): {benchmarks.spread(latencies)} "
            f"(batch_max_seconds={defaults.batch_max_seconds}, heartbeat_s={defaults.heartbeat_s})"
        )


if __name__ == "__main__":
    main()
