"""How short a schedule the pipeline DAG keeps up with, under a real scheduler, on this machine.

Starts the test suite's Airflow deployment (scheduler, dag-processor, triggerer, api-server,
LocalExecutor, PostgreSQL), writes the shipped pipeline DAG with ``every <N>s`` and catch-up on,
starting now, and lets the scheduler run it for ``--minutes`` while a writer commits about
``--rate`` transactions a second to two tables on the MySQL sandbox. For each run it prints how
late it finished (run end minus interval end), how long it took, whether it applied, caught a
backlog up, or was covered, and how many of its tasks ran (a skipped task starts no process). A
schedule keeps up when the lateness stays bounded.

    scripts/mysql-sandbox start
    .venv/bin/python scripts/bench_schedule.py --every 30 60 --minutes 5
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint  # noqa: E402
from tests.support.airflow_deployment import AirflowDeployment  # noqa: E402
from tests.support.mysql import execute  # noqa: E402
from tests.support.pipeline import seed, writing  # noqa: E402

DAG_SOURCE = """
import json
from airflow_mysql_cdc.pipeline.dag import build_pipeline_dag
from airflow_mysql_cdc.pipeline.config import PipelineConfig

dag = build_pipeline_dag(PipelineConfig.from_dict(json.loads({config!r})))
"""


def measure(deployment: AirflowDeployment, source: MySqlEndpoint, every_s: int, minutes: float, rate: float):
    api = deployment.client()
    suffix = uuid.uuid4().hex[:6]
    database = f"bench_schedule_{suffix}"
    execute(source, f"CREATE DATABASE {database}")
    shop = source.with_database(database)
    seed(shop, "orders", 2000)
    seed(shop, "payments", 2000)
    api.create_connection(
        f"src_{suffix}", "mysql_cdc", host=source.host, port=source.port, login=source.user,
        password=source.password or "", extra={"server_id": 7500},
    )  # fmt: skip
    api.create_connection(f"spark_{suffix}", "spark", host="local[2]")
    dag_id = f"bench_every_{every_s}s_{suffix}"
    start = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    config = {
        "dag_id": dag_id, "pipeline_id": dag_id, "mysql_cdc_conn_id": f"src_{suffix}",
        "spark_conn_id": f"spark_{suffix}", "tables": [f"{database}.orders", f"{database}.payments"],
        "lake_root": tempfile.mkdtemp(prefix=f"{dag_id}-"), "schedule": f"every {every_s}s",
        "start_date": start.isoformat(), "catchup": True, "retries": 0, "sensor_mode": "poke",
        "sensor_poke_interval_s": 2,
    }  # fmt: skip
    deployment.write_dag_file(f"{dag_id}.py", DAG_SOURCE.format(config=json.dumps(config)))
    api.wait_for_dag(dag_id, file_name=f"{dag_id}.py")
    writers = writing(shop, minutes * 60, 3, "orders", "payments", pause_s=2 / rate)
    api.unpause(dag_id)
    time.sleep(minutes * 60)
    api.set_paused(dag_id, True)
    for writer in writers:
        writer.join()
    runs = [run for run in api.dag_runs(dag_id) if run.state in ("success", "failed")]
    print(f"\nschedule every {every_s}s for {minutes} min, about {rate:.0f} transactions/s:")
    lateness = []
    for run in runs:
        body = api.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run.run_id}")
        ended = datetime.datetime.fromisoformat(body["end_date"])
        started = datetime.datetime.fromisoformat(body["start_date"])
        late = (ended - run.data_interval_end).total_seconds()
        lateness.append(late)
        applied = None
        with contextlib.suppress(Exception):  # no application ran: a covered run has no such XCom
            applied = api.xcom(dag_id, run.run_id, "replicate", "applied")
        what = "covered: no Spark" if applied is None else f"{applied['transactions']} transactions"
        took = (ended - started).total_seconds()
        states = list(api.task_states(dag_id, run.run_id).values())
        ran = sum(state in ("success", "failed") for state in states)
        print(
            f"  {run.data_interval_end:%H:%M:%S}  {run.state:7}  took {took:5.1f} s  finished {late:6.1f} s "
            f"after its interval end  ({what}; {ran} tasks ran, {states.count('skipped')} skipped)"
        )
    pending = len(api.dag_runs(dag_id, states=["queued", "running"]))
    third = max(1, len(lateness) // 3)
    early, late_runs = statistics.median(lateness[:third]), statistics.median(lateness[-third:])
    print(
        f"  runs finished: {len(runs)}, still queued or running: {pending}; median lateness of the "
        f"first third {early:.0f} s, of the last third {late_runs:.0f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default="mysql://root@127.0.0.1:13306/")
    parser.add_argument("--every", type=int, nargs="+", default=[30, 60], help="schedule intervals, seconds")
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--rate", type=float, default=50.0, help="transactions per second, both tables")
    args = parser.parse_args()
    source = MySqlEndpoint.from_url(args.dsn).with_database(None)
    deployment = AirflowDeployment(Path(tempfile.mkdtemp(prefix="bench-schedule-"))).start()
    try:
        for every_s in args.every:
            measure(deployment, source, every_s, args.minutes, args.rate)
    finally:
        deployment.stop()


if __name__ == "__main__":
    main()
