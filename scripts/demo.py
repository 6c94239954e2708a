"""The README demo: a sample shop on the sandbox, live writes, the binlog application, a checksum.

1. Recreates the ``demo_shop`` schema (customers, orders) on the MySQL sandbox.
2. Starts a workload that inserts, updates and deletes rows while the next step runs.
3. Runs the binlog application under spark-submit for one *segment* that ends a few seconds after
   the workload stops: the application tails the binlog live until the segment end passes.
4. Writes some more, then runs a second, catch-up segment that resumes where the lake stopped.
5. Compares every table with its Delta copy (row count and checksum) and prints where the lake is.

Snapshots and the Airflow DAG come with later releases; this demo starts from empty tables.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from airflow_mysql_cdc.engine.apply_config import ApplyConfig  # noqa: E402
from airflow_mysql_cdc.engine.endpoint import MySqlEndpoint  # noqa: E402
from airflow_mysql_cdc.engine.verify import compare_table  # noqa: E402

SCHEMA = (
    "DROP DATABASE IF EXISTS demo_shop",
    "CREATE DATABASE demo_shop",
    """CREATE TABLE demo_shop.customers (
        id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
        email VARCHAR(190) NOT NULL UNIQUE,
        name VARCHAR(100) NOT NULL,
        tier ENUM('basic', 'gold', 'platinum') NOT NULL DEFAULT 'basic',
        created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
    )""",
    """CREATE TABLE demo_shop.orders (
        id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
        customer_id BIGINT UNSIGNED NOT NULL,
        total DECIMAL(12, 2) NOT NULL,
        status ENUM('new', 'paid', 'shipped', 'cancelled') NOT NULL DEFAULT 'new',
        details JSON,
        updated_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)
    )""",
)
TABLES = ("demo_shop.customers", "demo_shop.orders")


def workload(endpoint: MySqlEndpoint, seconds: float, seed: int) -> int:
    """Random shop traffic; returns the number of transactions committed."""
    rng = random.Random(seed)
    transactions = 0
    deadline = time.monotonic() + seconds
    with endpoint.connect(autocommit=False) as connection, connection.cursor() as cursor:
        while time.monotonic() < deadline:
            choice = rng.random()
            if choice < 0.5:
                suffix = rng.randrange(10**9)
                cursor.execute(
                    "INSERT INTO demo_shop.customers (email, name, tier) VALUES (%s, %s, %s)",
                    (f"user{suffix}@example.com", f"Customer {suffix}", rng.choice(["basic", "gold"])),
                )
                customer_id = cursor.lastrowid
                for _ in range(rng.randint(1, 3)):
                    cursor.execute(
                        "INSERT INTO demo_shop.orders (customer_id, total, details) VALUES (%s, %s, %s)",
                        (
                            customer_id,
                            rng.randrange(100, 100000) / 100,
                            json.dumps({"items": rng.randint(1, 9)}),
                        ),
                    )
            elif choice < 0.8:
                cursor.execute(
                    "UPDATE demo_shop.orders SET status = %s ORDER BY RAND() LIMIT 3",
                    (rng.choice(["paid", "shipped", "cancelled"]),),
                )
            else:
                cursor.execute("DELETE FROM demo_shop.orders WHERE status = 'cancelled' LIMIT 2")
            connection.commit()
            transactions += 1
            time.sleep(0.01)
    return transactions


def run_application(config: ApplyConfig, endpoint: MySqlEndpoint, workdir: Path) -> dict:
    """One run of the binlog application under spark-submit, credentials in the environment."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.json").write_text(config.to_json())
    python = sys.executable
    environment = {
        **os.environ,
        **endpoint.to_environment(),
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        "PATH": str(Path(python).parent) + os.pathsep + os.environ.get("PATH", ""),
    }
    argv = [
        "spark-submit", "--master", "local[2]", "--conf", "spark.ui.showConsoleProgress=false",
        str(REPO_ROOT / "spark_apps" / "binlog_to_delta.py"),
        "--config", str(workdir / "config.json"), "--result-file", str(workdir / "result.json"),
    ]  # fmt: skip
    print(f"$ {' '.join(argv[:5])} ... ({config.mode} from {config.start or '(empty)'})", flush=True)
    completed = subprocess.run(argv, env=environment, stderr=subprocess.PIPE, text=True)
    for line in completed.stderr.splitlines():
        if "airflow_mysql_cdc" in line or "ERROR" in line:
            print("   " + line.split(" ", 2)[-1])
    if completed.returncode != 0:
        raise SystemExit(f"the binlog application failed with exit code {completed.returncode}")
    return json.loads((workdir / "result.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default="mysql://root@127.0.0.1:13306/")
    parser.add_argument("--lake", type=Path, default=REPO_ROOT / ".cache" / "demo" / "lake")
    parser.add_argument("--seconds", type=float, default=15.0, help="how long the live workload writes")
    args = parser.parse_args()
    endpoint = MySqlEndpoint.from_url(args.dsn).with_database(None)
    workdir = args.lake.parent / "runs"
    shutil.rmtree(args.lake, ignore_errors=True)
    shutil.rmtree(workdir, ignore_errors=True)

    with endpoint.connect() as connection, connection.cursor() as cursor:
        for statement in SCHEMA:
            cursor.execute(statement)
        cursor.execute("SELECT @@gtid_executed")
        start = cursor.fetchone()[0]
    print(f"demo_shop created on {endpoint}; replication starts at {start}")

    written: list[int] = []
    writer = threading.Thread(target=lambda: written.append(workload(endpoint, args.seconds, 1)))
    writer.start()
    segment_end = time.time() + args.seconds + 3
    end_text = datetime.datetime.fromtimestamp(segment_end, datetime.UTC).strftime("%H:%M:%S")
    print(
        f"workload running for {args.seconds:.0f}s; segment 1 ends at {end_text} UTC "
        "(the application tails the binlog live until then)"
    )
    base = {"pipeline_id": "demo", "lake_root": str(args.lake), "tables": TABLES, "progress_interval_s": 5.0}
    first = run_application(
        ApplyConfig(**base, start_gtids=start, mode="segment", segment_end_us=int(segment_end * 1e6)),
        endpoint,
        workdir / "segment-1",
    )
    writer.join()
    more = workload(endpoint, 3, 2)
    print(f"segment 1 applied {first['transactions']} transactions; {more} more written since")
    second = run_application(
        ApplyConfig(**base, start_gtids=first["end_gtids"], mode="until_caught_up"),
        endpoint,
        workdir / "segment-2",
    )

    print()
    print(
        f"{'table':22} {'MySQL rows':>10} {'lake rows':>10} "
        f"{'MySQL checksum':>17} {'lake checksum':>17}  match"
    )
    all_equal = True
    for table in TABLES:
        schema, name = table.split(".")
        comparison = compare_table(endpoint, args.lake, schema, name)
        all_equal &= comparison.equal
        print(
            f"{table:22} {comparison.source_rows:>10} {comparison.lake_rows:>10} "
            f"{comparison.source_checksum:>17} {comparison.lake_checksum:>17}  "
            f"{'yes' if comparison.equal else 'NO'}"
        )
    print()
    print(f"transactions written     {written[0] + more}")
    print(f"segment 1                {first['transactions']} transactions in {first['batches']} batches, "
          f"end {first['end_gtids']}")  # fmt: skip
    print(
        f"segment 2 (catch-up)     {second['transactions']} transactions, "
        f"resumed from {second['resumed_from']}"
    )
    print(f"end GTID set             {second['end_gtids']}")
    print(
        f"lag at end               {second['lag_s']}s (commit of the last applied transaction to end of run)"
    )
    print(
        f"Delta tables             {args.lake}/demo_shop/<table>\n"
        f"changelogs               {args.lake}/_changelog/demo_shop/<table>"
    )
    print()
    print("Query the lake, for example with polars (pip install polars):")
    print(f"  python -c \"import polars; print(polars.read_delta('{args.lake}/demo_shop/orders').head())\"")
    if not all_equal:
        raise SystemExit("MISMATCH between MySQL and the lake")
    print("\nThe lake equals MySQL as of the end GTID set.")


if __name__ == "__main__":
    main()
