"""The README demo: the example DAG replicates a sample shop on the sandbox while it is being written.

1. Recreates the ``demo_shop`` schema (customers, products, orders; JSON, DECIMAL, BLOB, ENUM,
   DATETIME(6) columns) on the MySQL sandbox and fills it.
2. Starts a workload of inserts, updates and deletes that runs while the DAG runs.
3. Runs the shipped DAG (``dags/mysql_cdc_daily.py``) with ``airflow dags test`` for several
   consecutive intervals, configured by a JSON file (an interval of ``--interval-s`` seconds instead
   of a day): the first run checks the prerequisites, snapshots the tables on Spark and applies the
   binlog up to its interval end; every later run starts from the previous run's checkpoint.
4. After every run, while the workload goes on, compares every table with its Delta copy as of
   the run's published end GTID set: a second MySQL server replicates the sandbox with its applier
   stopped, and is advanced to exactly that set (``START REPLICA SQL_THREAD UNTIL
   SQL_AFTER_GTIDS=...``) before the comparison (row count and checksum per table).
5. Stops the workload before the last interval ends, compares once more with MySQL itself, and
   prints the checkpoint chain, where the lake is and how to open the same DAG in the Airflow UI.
   After each run it prints the run's asset events (one per lake table: changes, Delta versions).
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
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from airflow_mysql_cdc.engine.apply.config import ApplyResult  # noqa: E402
from airflow_mysql_cdc.engine.lake.compare import TableComparison, compare_table  # noqa: E402
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint  # noqa: E402
from airflow_mysql_cdc.engine.values.gtid import GtidSet  # noqa: E402
from airflow_mysql_cdc.operators.binlog_apply import summary_line  # noqa: E402
from tests.support.frozen_replica import REPLICA_FLAGS, FrozenReplica  # noqa: E402
from tests.support.mysql import load_sandbox_module, scalar  # noqa: E402

DAG_ID = "mysql_cdc_demo"
TABLES = ("demo_shop.customers", "demo_shop.products", "demo_shop.orders")
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
    """CREATE TABLE demo_shop.products (
        sku VARCHAR(32) PRIMARY KEY,
        title VARCHAR(200) NOT NULL,
        price DECIMAL(10, 2) NOT NULL,
        weight_kg DOUBLE,
        attributes JSON,
        thumbnail BLOB,
        launched DATE
    )""",
    """CREATE TABLE demo_shop.orders (
        id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
        customer_id BIGINT UNSIGNED NOT NULL,
        sku VARCHAR(32) NOT NULL,
        total DECIMAL(12, 2) NOT NULL,
        status ENUM('new', 'paid', 'shipped', 'cancelled') NOT NULL DEFAULT 'new',
        details JSON,
        updated_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)
    )""",
)


def fill(endpoint: MySqlEndpoint, rng: random.Random) -> None:
    """Rows the first run snapshots: 60 products, 500 customers, 1,500 orders."""
    with endpoint.connect() as connection, connection.cursor() as cursor:
        for statement in SCHEMA:
            cursor.execute(statement)
        cursor.executemany(
            "INSERT INTO demo_shop.products VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [
                (f"SKU-{n:04}", f"Product {n}", rng.randrange(100, 50000) / 100, rng.random() * 5,
                 json.dumps({"color": rng.choice(["red", "blue"]), "sizes": [38, 40]}),
                 bytes(rng.randrange(256) for _ in range(16)), datetime.date(2026, 1, 1 + n % 28))
                for n in range(60)
            ],
        )  # fmt: skip
        cursor.executemany(
            "INSERT INTO demo_shop.customers (email, name, tier) VALUES (%s, %s, %s)",
            [(f"seed{n}@example.com", f"Customer {n}", rng.choice(["basic", "gold"])) for n in range(500)],
        )
        cursor.executemany(
            "INSERT INTO demo_shop.orders (customer_id, sku, total, details) VALUES (%s, %s, %s, %s)",
            [
                (rng.randint(1, 500), f"SKU-{rng.randrange(60):04}", rng.randrange(100, 90000) / 100,
                 json.dumps({"items": rng.randint(1, 5)}))
                for _ in range(1500)
            ],
        )  # fmt: skip


def workload(endpoint: MySqlEndpoint, stop: threading.Event, rng: random.Random) -> int:
    """Random shop traffic until ``stop`` is set; returns the number of transactions committed."""
    transactions = 0
    with endpoint.connect(autocommit=False) as connection, connection.cursor() as cursor:
        while not stop.is_set():
            choice = rng.random()
            if choice < 0.45:
                suffix = rng.randrange(10**9)
                cursor.execute(
                    "INSERT INTO demo_shop.customers (email, name, tier) VALUES (%s, %s, %s)",
                    (f"user{suffix}@example.com", f"Customer {suffix}", rng.choice(["basic", "gold"])),
                )
                customer_id = cursor.lastrowid
                for _ in range(rng.randint(1, 3)):
                    cursor.execute(
                        "INSERT INTO demo_shop.orders (customer_id, sku, total, details)"
                        " VALUES (%s, %s, %s, %s)",
                        (customer_id, f"SKU-{rng.randrange(60):04}", rng.randrange(100, 100000) / 100,
                         json.dumps({"items": rng.randint(1, 9)})),
                    )  # fmt: skip
            elif choice < 0.75:
                cursor.execute(
                    "UPDATE demo_shop.orders SET status = %s ORDER BY RAND() LIMIT 3",
                    (rng.choice(["paid", "shipped", "cancelled"]),),
                )
            elif choice < 0.85:
                cursor.execute(
                    "UPDATE demo_shop.products SET price = price * %s, attributes = JSON_SET(attributes, "
                    "'$.discount', %s) WHERE sku = %s",
                    (rng.choice([0.9, 1.1]), rng.randint(0, 30), f"SKU-{rng.randrange(60):04}"),
                )
            else:
                cursor.execute("DELETE FROM demo_shop.orders WHERE status = 'cancelled' LIMIT 2")
            connection.commit()
            transactions += 1
            time.sleep(0.01)
    return transactions


def airflow_environment(workdir: Path, endpoint: MySqlEndpoint, config_file: Path) -> dict[str, str]:
    """Everything ``airflow`` needs for the demo; the password travels in the connection variable only."""
    connection = {
        "conn_type": "mysql_cdc", "host": endpoint.host, "port": endpoint.port, "login": endpoint.user,
        "password": endpoint.password or "", "extra": {"server_id": 4242},
    }  # fmt: skip
    bin_dir = Path(sys.executable).parent
    return {
        **os.environ,
        "AIRFLOW_HOME": str(workdir / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG": str(config_file),
        "AIRFLOW_CONN_MYSQL_CDC_DEFAULT": json.dumps(connection),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def run_logged(argv: list[str], environment: dict[str, str], log_file: Path) -> int:
    with log_file.open("w") as log:
        return subprocess.run(argv, env=environment, stdout=log, stderr=subprocess.STDOUT).returncode


def run_results(environment: dict[str, str], logical_date: datetime.datetime) -> dict[str, Any]:
    """The run's state, the XComs of its checkpoint and apply tasks and its asset events, read from
    Airflow's database."""
    script = f"""
import json
from airflow.models.asset import AssetEvent, AssetModel
from airflow.models.dagrun import DagRun
from airflow.models.taskinstance import TaskInstance
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
from sqlalchemy import select
import pendulum
with create_session() as session:
    run = session.scalar(select(DagRun).where(DagRun.dag_id == {DAG_ID!r},
                         DagRun.logical_date == pendulum.parse({logical_date.isoformat()!r})))
    out = {{"state": str(run.state) if run else "missing"}}
    for key in ("return_value", "applied", "snapshot"):
        rows = session.execute(XComModel.get_many(run_id=run.run_id, key=key, task_ids="replicate",
                                                  dag_ids={DAG_ID!r})).scalars().all() if run else []
        value = XComModel.deserialize_value(rows[0]) if rows else None
        out[key] = json.loads(value) if isinstance(value, str) else value
    events = session.execute(
        select(AssetModel.uri, AssetEvent.extra).join(AssetModel, AssetModel.id == AssetEvent.asset_id)
        .where(AssetEvent.source_dag_id == {DAG_ID!r}, AssetEvent.source_run_id == run.run_id)
        .order_by(AssetEvent.id)
    ).all() if run else []
    out["asset_events"] = [{{"uri": uri, "extra": extra}} for uri, extra in events]
    for task_id in ("resumability", "verify_lake"):
        rows = session.execute(XComModel.get_many(run_id=run.run_id, key="return_value", task_ids=task_id,
                                                  dag_ids={DAG_ID!r})).scalars().all() if run else []
        value = XComModel.deserialize_value(rows[0]) if rows else None
        out[task_id] = json.loads(value) if isinstance(value, str) else value
    out["verify_lake_s"] = session.scalar(select(TaskInstance.duration).where(
        TaskInstance.dag_id == {DAG_ID!r}, TaskInstance.run_id == run.run_id,
        TaskInstance.task_id == "verify_lake")) if run else None
print(json.dumps(out))
"""
    completed = subprocess.run(
        [sys.executable, "-c", script], env=environment, capture_output=True, text=True, check=True
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def write_config(config_file: Path, lake: Path, first_end: datetime.datetime, interval_s: int) -> None:
    config = {
        "dag_id": DAG_ID, "pipeline_id": "demo", "tables": list(TABLES), "lake_root": str(lake),
        "schedule": f"every {interval_s}s", "start_date": first_end.isoformat(), "catchup": False,
        "chunk_size": 400, "retries": 0, "sensor_mode": "poke", "sensor_poke_interval_s": 2,
        "batch_max_seconds": 0.5,  # verify: the shipped default, sample
    }  # fmt: skip
    config_file.write_text(json.dumps(config, indent=2))


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def run_interval(
    number: int, interval_end: datetime.datetime, environment: dict[str, str], logs: Path
) -> dict:
    """One ``airflow dags test`` of the DAG; prints what the run did and returns its checkpoint."""
    print(
        f"run {number}: airflow dags test {DAG_ID} {interval_end.isoformat()}  (interval ends "
        f"{interval_end:%H:%M:%S} UTC; the run tails the binlog until then)",
        flush=True,
    )
    started = time.monotonic()
    log_file = logs / f"run-{number}.log"
    airflow = str(Path(sys.executable).with_name("airflow"))
    code = run_logged([airflow, "dags", "test", DAG_ID, interval_end.isoformat()], environment, log_file)
    results = run_results(environment, interval_end)
    if code != 0 or results["state"] != "success":
        raise SystemExit(f"run {number} ended {results['state']}; its log: {log_file}")
    record, applied = results["return_value"], results["applied"]
    snapshot = results["snapshot"] or {"tables": []}
    snapshotted = sum(table["rows"] for table in snapshot["tables"])
    print(
        f"   success in {time.monotonic() - started:.0f}s"
        + (f", snapshot of {snapshotted} rows" if snapshot["tables"] else "")
        + (f"\n   {summary_line(ApplyResult.from_dict(applied))}" if applied else "")
        + f"\n   checkpoint {record['start_gtids']} -> {record['end_gtids']}"
        + f"\n   {headroom_line(results.get('resumability'))}"
        + f"\n   {verify_line(results.get('verify_lake'), results.get('verify_lake_s'))}"
        + "".join(f"\n   {line}" for line in asset_event_lines(results.get("asset_events") or [])),
        flush=True,
    )
    return record


def asset_event_lines(events: list[dict[str, Any]]) -> list[str]:
    """One line per asset event the run emitted (a lake table each): its changes and Delta versions."""
    lines = [f"asset events: {len(events)} (per table its target and its changelog; docs/assets.md)"]
    for event in events:
        extra = event["extra"]
        rows = ", ".join(f"{op} {count}" for op, count in extra["rows_by_op"].items())
        versions = extra["lake_versions"].get(extra["kind"]) or {}
        written = (
            f"versions {versions['first']}-{versions['last']}" if versions.get("first") is not None
            else f"no new version (at {versions.get('last')})"
        )  # fmt: skip
        lines.append(f"  {event['uri']}: {extra['rows_applied']} changes ({rows}), {written}")
    return lines


def headroom_line(resumability: Any) -> str:
    """What the resumability task saw ahead: the binlog headroom of the checkpoint it resumed from."""
    looked_ahead = resumability if isinstance(resumability, dict) else {}
    if "headroom" not in looked_ahead:
        return "binlog headroom: nothing to resume from yet (the first run snapshots)"
    return looked_ahead["headroom"]["message"]


def verify_line(verified: Any, task_s: float | None = None) -> str:
    """What the run's verify task found: the lake against live MySQL at the run's position (sampled),
    each table's coverage, and what the task cost (its duration, process start included)."""
    if not isinstance(verified, dict):
        return "verify: no result"
    if verified.get("skipped"):
        return f"verify: skipped ({verified['skipped']})"
    tables = ", ".join(
        f"{table['table'].split('.')[-1]} {table['status']} ({table['rows_compared']} of "
        f"{table['table_rows']} rows, {table['from_binlog']} through the binlog)"
        if table["status"] not in ("inconclusive", "skipped")
        else f"{table['table'].split('.')[-1]} {table['status']}: {table['reason']}"
        for table in verified["tables"]
    )
    cost = f"; task {task_s:.1f} s, comparing {verified['seconds']:.1f} s" if task_s is not None else ""
    return f"verify ({verified['mode']}) against live MySQL at the run's end set: {tables}{cost}"


def print_comparison(comparisons: list[TableComparison], indent: str = "") -> bool:
    header = ("table", "MySQL rows", "lake rows", "MySQL checksum", "lake checksum")
    print(f"{indent}{header[0]:22} {header[1]:>10} {header[2]:>10} {header[3]:>17} {header[4]:>17}  match")
    for c in comparisons:
        print(
            f"{indent}{c.table:22} {c.source_rows:>10} {c.lake_rows:>10} {c.source_checksum:>17} "
            f"{c.lake_checksum:>17}  {'yes' if c.equal else 'NO'}"
        )
    return all(c.equal for c in comparisons)


def start_frozen_replica(source: MySqlEndpoint, workdir: Path) -> tuple[FrozenReplica, Path]:
    """A fresh second server that receives the sandbox's binlog from now on and applies it only when
    asked (the demo's schema is created after this, so the replica needs nothing older)."""
    sandbox = load_sandbox_module()
    datadir = workdir / "replica"
    sandbox.stop(datadir=datadir, log=lambda _: None)
    shutil.rmtree(datadir, ignore_errors=True)
    port = sandbox.free_port()
    sandbox.start(
        port=port, datadir=datadir, server_id=2, extra_flags=list(REPLICA_FLAGS), log=lambda _: None
    )
    executed = GtidSet.parse(scalar(source, "SELECT @@GLOBAL.gtid_executed"))
    replica = FrozenReplica.attach(MySqlEndpoint("127.0.0.1", port, "root"), source, starting_after=executed)
    return replica, datadir


def print_where_to_look(lake: Path, workdir: Path, config_file: Path, endpoint: MySqlEndpoint) -> None:
    orders = f"{lake}/demo_shop/orders"
    connection = json.dumps(
        {"conn_type": "mysql_cdc", "host": endpoint.host, "port": endpoint.port, "login": endpoint.user,
         "extra": {"server_id": 4242}}
    )  # fmt: skip
    print(f"Delta tables             {lake}/demo_shop/<table>")
    print(f"changelogs               {lake}/_changelog/demo_shop/<table>")
    print(f"run logs                 {workdir / 'logs'}")
    print()
    print("Query the lake with polars (installed in .venv) or DuckDB's delta extension:")
    print(f"  .venv/bin/python -c \"import polars; print(polars.read_delta('{orders}').head())\"")
    query = f"SELECT status, count(*) FROM delta_scan('{orders}') GROUP BY 1"
    print(f'  duckdb -c "INSTALL delta; LOAD delta; {query}"')
    print()
    print("Open the same DAG in the Airflow UI (http://localhost:8080; standalone prints the password):")
    print(f"  export AIRFLOW_HOME={workdir / 'airflow'} AIRFLOW__CORE__DAGS_FOLDER={REPO_ROOT / 'dags'}")
    print(f"  export AIRFLOW__CORE__LOAD_EXAMPLES=False AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG={config_file}")
    print(f"  export AIRFLOW_CONN_MYSQL_CDC_DEFAULT='{connection}'")
    print('  export AIRFLOW_CONN_SPARK_DEFAULT=\'{"conn_type": "spark", "host": "local[2]"}\'')
    print("  .venv/bin/airflow standalone")
    print("(standalone keeps Airflow's database in SQLite: fine for looking around; backfills need")
    print(" PostgreSQL or MySQL, see docs/pipeline-dag.md)")


def run_intervals(
    endpoint: MySqlEndpoint, replica: FrozenReplica, args: argparse.Namespace, workdir: Path
) -> tuple[list[dict], int, bool]:
    """Fill the shop, then run the DAG interval after interval with the workload going; after each
    run, compare the lake with the replica stopped at its end set. Returns the checkpoint records,
    the transactions written, and whether every comparison matched."""
    lake, logs, config_file = workdir / "lake", workdir / "logs", workdir / "pipeline.json"
    fill(endpoint, random.Random(7))
    print(f"demo_shop created on {endpoint} with {', '.join(TABLES)}")
    environment = airflow_environment(workdir, endpoint, config_file)
    print("preparing Airflow's database (airflow db migrate) ...", flush=True)
    airflow = str(Path(sys.executable).with_name("airflow"))
    if run_logged([airflow, "db", "migrate"], environment, logs / "db-migrate.log") != 0:
        raise SystemExit(f"airflow db migrate failed; see {logs / 'db-migrate.log'}")
    first_end = utc_now() + datetime.timedelta(seconds=25)
    write_config(config_file, lake, first_end, args.interval_s)

    stop = threading.Event()
    written: list[int] = []
    writer = threading.Thread(target=lambda: written.append(workload(endpoint, stop, random.Random(11))))
    writer.start()
    records = []
    all_equal = True
    try:
        for number in range(1, args.runs + 1):
            interval_end = first_end + datetime.timedelta(seconds=(number - 1) * args.interval_s)
            if number == args.runs:
                # The workload stops 3 s before the last interval ends, so the lake can equal MySQL.
                interval_end = max(interval_end, utc_now() + datetime.timedelta(seconds=8))
                threading.Timer((interval_end - utc_now()).total_seconds() - 3, stop.set).start()
            records.append(run_interval(number, interval_end, environment, logs))
            print(f"   the lake vs MySQL as of {records[-1]['end_gtids']} (the replica stopped there):")
            all_equal &= print_comparison(replica.compare(records[-1]["end_gtids"], lake, TABLES), "   ")
    finally:
        stop.set()
        writer.join()
    return records, written[0] if written else 0, all_equal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default="mysql://root@127.0.0.1:13306/")
    parser.add_argument("--workdir", type=Path, default=REPO_ROOT / ".cache" / "demo")
    parser.add_argument("--runs", type=int, default=3, help="how many consecutive intervals to run")
    parser.add_argument("--interval-s", type=int, default=30, help="length of one interval")
    args = parser.parse_args()
    endpoint = MySqlEndpoint.from_url(args.dsn).with_database(None)
    workdir: Path = args.workdir.resolve()
    lake = workdir / "lake"
    for path in (lake, workdir / "airflow", workdir / "logs"):
        shutil.rmtree(path, ignore_errors=True)
    (workdir / "logs").mkdir(parents=True)
    replica, replica_datadir = start_frozen_replica(endpoint, workdir)
    print(f"a replica at {replica.endpoint} receives the binlog, to be stopped at each run's end set")
    try:
        records, written, all_equal = run_intervals(endpoint, replica, args, workdir)
    finally:
        load_sandbox_module().stop(datadir=replica_datadir, log=lambda _: None)

    print()
    print("after the workload stopped, the lake vs MySQL itself:")
    all_equal &= print_comparison([compare_table(endpoint, lake, *table.split(".")) for table in TABLES])
    print()
    print(f"transactions written     {written} during {len(records)} runs")
    print(f"end GTID set             {records[-1]['end_gtids']}")
    print_where_to_look(lake, workdir, workdir / "pipeline.json", endpoint)
    if not all_equal:
        raise SystemExit("MISMATCH between MySQL and the lake")
    print("\nThe lake equalled MySQL as of every run's published end GTID set.")


if __name__ == "__main__":
    main()
