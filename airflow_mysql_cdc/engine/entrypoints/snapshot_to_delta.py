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

import logging
import resource
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from itertools import islice
from typing import Any

from airflow_mysql_cdc.engine.entrypoints.common import (
    argument_parser,
    configure_logging,
    exit_hard,
    read_configuration,
    run_to_result_file,
)
from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.runtime.executor_probe import EXECUTOR_REQUIREMENTS
from airflow_mysql_cdc.engine.runtime.executor_secrets import ExecutorSecrets
from airflow_mysql_cdc.engine.runtime.spark_tasks import SparkTasks
from airflow_mysql_cdc.engine.snapshot.config import SnapshotConfig
from airflow_mysql_cdc.engine.snapshot.result import SnapshotResult
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

log = logging.getLogger("airflow_mysql_cdc.snapshot")


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


def run(config: SnapshotConfig, endpoint: MySqlEndpoint, runner: WindowRunner) -> SnapshotResult:
    return SnapshotResult.of_tables(
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
    )


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
        return run_to_result_file(lambda: run(config, endpoint, run_sequentially).to_dict(), args.result_file)

    def on_spark() -> dict[str, Any]:
        # Inside the result's error handling: an executor check that fails (a missing module, a
        # wrong interpreter, no capacity) ends the application with its error's exit code.
        runner, secrets, transfer = spark_runner("mysql-cdc-snapshot")
        try:
            result = run(config, endpoint, runner)
        finally:
            secrets.withdraw()
        # Peak resident memory of this driver process (Linux reports KiB), for capacity planning.
        peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        result = replace(result, bytes_to_driver=transfer.bytes_to_driver, driver_peak_rss_bytes=peak_rss)
        log.info(
            "snapshot: %d window(s) sent %d bytes to the driver (%d per window); driver peak RSS %d MiB",
            transfer.windows, transfer.bytes_to_driver, transfer.bytes_to_driver // max(1, transfer.windows),
            peak_rss >> 20,
        )  # fmt: skip
        return result.to_dict()

    return run_to_result_file(on_spark, args.result_file)


if __name__ == "__main__":
    exit_hard(main)
