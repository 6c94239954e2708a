"""Entry point of the snapshot application: ``spark-submit <this file> --config C --result-file R``.

Windows run as Spark tasks, one per chunk, each with its own MySQL connections and its own
replication server_id (``base_server_id + chunk index``) for reconciliation; each task writes its
chunk's rows as a Parquet file under the target table and sends back only the file's description,
and the driver commits each finished job's files with their chunks' progress in one Delta
transaction, while other windows run. Tasks carry no credential: they read the application's
broadcast secrets (:mod:`~airflow_mysql_cdc.engine.runtime.executor_secrets`). With ``--no-spark``
(tests, tiny tables) windows run one after another in this process. Credentials come only from
the environment: ``AIRFLOW_MYSQL_CDC_ENDPOINT`` (MySQL) and
``AIRFLOW_MYSQL_CDC_LAKE_STORAGE_OPTIONS`` (the lake's secret storage options, see
:mod:`~airflow_mysql_cdc.engine.lake.storage`); the config file holds none.

Exit codes (set by the error's class, :mod:`airflow_mysql_cdc.engine.errors`): 0 done; 2 configuration
error (including a missing table or one without a usable key); 1 other.
"""

from __future__ import annotations

import json
import logging
import resource
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

from airflow_mysql_cdc.engine.entrypoints.common import (
    argument_parser,
    configure_logging,
    exit_hard,
    read_configuration,
    run_to_result_file,
)
from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.lake.storage import (
    check_storage_options,
    merged_storage_options,
    refuse_credentials,
)
from airflow_mysql_cdc.engine.runtime.executor_probe import EXECUTOR_REQUIREMENTS
from airflow_mysql_cdc.engine.runtime.executor_secrets import ExecutorSecrets
from airflow_mysql_cdc.engine.runtime.progress import PROGRESS_INTERVAL_S, check_progress_interval
from airflow_mysql_cdc.engine.runtime.spark_tasks import SparkTasks
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.snapshot.window_task import (
    WindowOutcome,
    WindowRunner,
    WindowTask,
    decode_outcome,
    for_executors,
    run_sequentially,
    window_outcome_bytes,
)
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet

log = logging.getLogger("airflow_mysql_cdc.snapshot")


@dataclass(frozen=True)
class SnapshotConfig:
    lake_root: str
    tables: tuple[str, ...]
    chunk_size: int = 50_000
    restart: bool = False
    base_server_id: int | None = None
    storage_options: dict[str, str] = field(default_factory=dict)
    """Public delta-rs storage options of the lake (endpoint, region); never credentials."""
    secret_storage_options: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """Credentials of the lake, from the environment at the application's start: never serialised."""
    executor_writes: bool = True
    """False: windows hand their rows to the driver, which writes them (benchmarks compare the two;
    lakes on stores executors do not write to, such as gs://, always do)."""
    progress_interval_s: float = PROGRESS_INTERVAL_S
    """How often each table's snapshot logs a progress line (chunks done/total, rows/s, ETA)."""

    def __post_init__(self) -> None:
        check_storage_options(self.storage_options, where="the snapshot application's configuration")
        check_progress_interval(self.progress_interval_s, ValueError)

    def lake_storage_options(self) -> dict[str, str] | None:
        """What delta-rs gets to reach the lake: public and secret options (None: its defaults)."""
        return merged_storage_options(self.storage_options, self.secret_storage_options)

    def to_json(self) -> str:
        public = {key: value for key, value in asdict(self).items() if key != "secret_storage_options"}
        return json.dumps(public, indent=2)

    @classmethod
    def from_file(cls, path: Path) -> SnapshotConfig:
        data = json.loads(path.read_text())
        refuse_credentials(data, where="the snapshot application's configuration")
        data["tables"] = tuple(data.get("tables") or ())
        if not data["tables"]:
            raise ValueError("tables is empty: name at least one schema.table")
        return cls(**data)


def spark_runner(app_name: str) -> tuple[WindowRunner, ExecutorSecrets, Transfer]:
    """Windows as Spark tasks, once the executors are known to have what a window imports; the
    secrets the tasks read (withdraw them when the application is done); and the count of what the
    tasks sent to the driver."""
    spark = SparkTasks.session(app_name)
    spark.require(EXECUTOR_REQUIREMENTS, name="snapshot")
    secrets = ExecutorSecrets(spark.context)
    transfer = Transfer()
    return partial(run_windows_on_spark, spark, secrets, transfer=transfer), secrets, transfer


@dataclass
class Transfer:
    """What the snapshot's Spark tasks sent to the driver (file descriptions, or rows where the
    driver writes them): reported so a run shows that its rows stayed on the executors."""

    bytes_to_driver: int = 0
    windows: int = 0


def run_windows_on_spark(
    spark: SparkTasks,
    secrets: ExecutorSecrets,
    tasks: Sequence[WindowTask],
    *,
    windows_per_job: int | None = None,
    jobs_in_flight: int = 2,
    transfer: Transfer | None = None,
) -> Iterator[list[WindowOutcome]]:
    """Windows as Spark tasks, ``windows_per_job`` (default: the cluster's parallelism) per job, with
    ``jobs_in_flight`` jobs submitted at once from driver threads; each job's windows are one wave.

    Each task writes its window's rows to a data file and sends back only the file's description
    (a few hundred bytes, :func:`~airflow_mysql_cdc.engine.snapshot.window_task.encode_outcome`); for
    a lake executors do not write to, it sends the rows as Arrow IPC. Tasks carry no credential
    (:func:`~airflow_mysql_cdc.engine.snapshot.window_task.for_executors`). The next job is already
    queued while the driver commits the previous one, so no core waits for the driver.
    Jobs are kept few because each cost the JVM about 90 ms of CPU on Spark local[2], as much as a
    third of a 20,000-row window (one-window jobs, four in flight, were slower).
    """
    per_job = windows_per_job or spark.parallelism
    shipped = for_executors(tasks, secrets.publish)

    def run_job(group: list[WindowTask]) -> list[WindowOutcome]:
        first, last = group[0].chunk.index, group[-1].chunk.index
        description = f"snapshot windows of {group[0].table}, chunks {first}-{last}"
        payloads = spark.run(secrets.bind(window_outcome_bytes), group, description=description)
        if transfer is not None:
            transfer.bytes_to_driver += sum(len(payload) for payload in payloads)
            transfer.windows += len(payloads)
        return [decode_outcome(payload) for payload in payloads]

    jobs = (list(shipped[start : start + per_job]) for start in range(0, len(shipped), per_job))
    with ThreadPoolExecutor(max_workers=jobs_in_flight, thread_name_prefix="snapshot-windows") as pool:
        in_flight = [pool.submit(run_job, group) for group in islice(jobs, jobs_in_flight)]
        try:
            while in_flight:
                done = in_flight.pop(0)
                wave = done.result()
                in_flight += [pool.submit(run_job, group) for group in islice(jobs, 1)]
                yield wave
        finally:
            for future in in_flight:  # a failed window or commit: no new jobs; running ones end
                future.cancel()


def run(config: SnapshotConfig, endpoint: MySqlEndpoint, runner: WindowRunner) -> dict[str, Any]:
    results = [
        snapshot_table(
            endpoint,
            config.lake_root,
            table,
            chunk_size=config.chunk_size,
            run_windows=runner,
            restart=config.restart,
            base_server_id=config.base_server_id,
            storage_options=config.lake_storage_options(),
            executor_writes=config.executor_writes,
            progress_interval_s=config.progress_interval_s,
        )
        for table in config.tables
    ]
    starts = [GtidSet.parse(result.stream_start) for result in results]
    stream_start = starts[0]
    for start in starts[1:]:
        stream_start &= start
    consistent = GtidSet()
    for result in results:
        consistent |= GtidSet.parse(result.consistent_point)
    return {
        "tables": [r.to_dict() for r in results],
        "stream_start": str(stream_start),
        "consistent_point": str(consistent),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser("Snapshot MySQL tables into Delta tables")
    parser.add_argument("--no-spark", action="store_true", help="run windows one by one in this process")
    args = parser.parse_args(argv)
    configure_logging()
    configuration = read_configuration(SnapshotConfig.from_file, args.config)
    if isinstance(configuration, ExitCode):
        return configuration
    config, endpoint = configuration
    if args.no_spark:
        return run_to_result_file(lambda: run(config, endpoint, run_sequentially), args.result_file)

    def on_spark() -> dict[str, Any]:
        # Inside the result's error handling: an executor check that fails (a missing module, a
        # wrong interpreter, no capacity) ends the application with its error's exit code.
        runner, secrets, transfer = spark_runner("mysql-cdc-snapshot")
        try:
            result = run(config, endpoint, runner)
        finally:
            secrets.withdraw()
        result["bytes_to_driver"] = transfer.bytes_to_driver
        # Peak resident memory of this driver process (Linux reports KiB), for capacity planning.
        result["driver_peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        log.info(
            "snapshot: %d window(s) sent %d bytes to the driver (%d per window); driver peak RSS %d MiB",
            transfer.windows, transfer.bytes_to_driver, transfer.bytes_to_driver // max(1, transfer.windows),
            result["driver_peak_rss_bytes"] >> 20,
        )  # fmt: skip
        return result

    return run_to_result_file(on_spark, args.result_file)


if __name__ == "__main__":
    exit_hard(main)
