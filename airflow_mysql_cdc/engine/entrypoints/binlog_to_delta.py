"""Entry point of the binlog application: ``spark-submit <this file> --config C --result-file R``.

Invariant: nothing secret is ever in argv or the config file: the MySQL endpoint (with its
password) comes from the ``AIRFLOW_MYSQL_CDC_ENDPOINT`` environment variable, the lake's secret
storage options from ``AIRFLOW_MYSQL_CDC_LAKE_STORAGE_OPTIONS``. The result file is
written atomically (temporary file, then rename) only after the last batch committed, so a
reader never sees a result for work that did not happen.

Why a driver loop and no Spark DataFrame: the binlog is one ordered stream read over one
connection; a Python streaming data source would move each micro-batch through an executor with
nothing to parallelise, and the Delta Lake Spark connector is a JVM package this project's
machines cannot download. delta-rs writes the same Delta tables from the driver, so the job runs
unchanged under ``local[*]`` and in a cluster's driver. Parallel work (snapshots, GTID-range
catch-up) is where Spark executors come in.

``--catchup-parallelism K`` (K > 1) reads a segment that is already closed with K range readers
in Spark tasks (:mod:`~airflow_mysql_cdc.engine.apply.parallel_catchup`); an open segment still runs the
single reader.

Exit codes (:class:`~airflow_mysql_cdc.engine.errors.ExitCode`, set by the error's class): 0 done;
2 configuration error; 3 another writer holds the pipeline; 4 the lake and the requested start
disagree, or a table cannot join the pipeline; 5 the binlog needed is gone or unreadable; 1 anything
else.
"""

from __future__ import annotations

import logging
import resource
import signal
import threading
from collections.abc import Sequence

import pymysql

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.apply.parallel_catchup import run_parallel_catchup
from airflow_mysql_cdc.engine.apply.range_reader import spark_range_runner
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.entrypoints.common import (
    argument_parser,
    configure_logging,
    exit_code_of_running_failure,
    exit_hard,
    read_configuration,
    write_result_atomically,
)
from airflow_mysql_cdc.engine.errors import CdcError, ExitCode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser("Apply MySQL binlog changes to Delta tables")
    parser.add_argument(
        "--catchup-parallelism",
        type=int,
        default=1,
        help="read a closed segment with this many range readers as Spark tasks (default 1: one reader)",
    )
    args = parser.parse_args(argv)
    configure_logging()
    configuration = read_configuration(ApplyConfig.from_file, args.config)
    if isinstance(configuration, ExitCode):
        return configuration
    config, endpoint = configuration
    logging.getLogger("airflow_mysql_cdc.apply").info(
        "pipeline %s: %s from %s into %s (tables: %s), reading %s",
        config.pipeline_id,
        config.mode,
        config.start or "(empty)",
        config.lake_root,
        ", ".join(config.tables),
        endpoint,
    )
    # SIGTERM (Airflow's on_kill, a task timeout) stops after committing the pending batch.
    stop_requested = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop_requested.set())
    try:
        if args.catchup_parallelism > 1:
            result = run_parallel_catchup(
                config,
                endpoint,
                parallelism=args.catchup_parallelism,
                run_ranges=spark_range_runner(),
                stop_requested=stop_requested,
            )
        else:
            result = run_apply(config, endpoint, stop_requested=stop_requested)
    except (CdcError, pymysql.err.OperationalError) as error:
        return exit_code_of_running_failure(error)
    # Peak resident memory of this driver process (Linux reports KiB), for capacity planning.
    peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result.driver_peak_rss_bytes = peak_rss_bytes
    # A run stopped on request ended short of its stop rule: the Airflow side adopts no such result
    # from a dead attempt's work dir (operators/attempt_marker.py); readers of the result ignore the key.
    write_result_atomically(
        args.result_file, {**result.to_dict(), "stopped_on_request": stop_requested.is_set()}
    )
    return 0


def run_and_exit() -> None:
    exit_hard(main)


if __name__ == "__main__":
    run_and_exit()
