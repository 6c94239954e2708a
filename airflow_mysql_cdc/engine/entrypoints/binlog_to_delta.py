"""Entry point of the binlog application: ``spark-submit <this file> --config C --result-file R``.

Invariant: nothing secret is ever in argv or the config file: the MySQL endpoint (with its
password) comes from the ``AIRFLOW_MYSQL_CDC_ENDPOINT`` environment variable. The result file is
written atomically (temporary file, then rename) only after the last batch committed, so a
reader never sees a result for work that did not happen.

Why a driver loop and no Spark DataFrame: the binlog is one ordered stream read over one
connection; a Python streaming data source would move each micro-batch through an executor with
nothing to parallelise, and the Delta Lake Spark connector is a JVM package this project's
machines cannot download. delta-rs writes the same Delta tables from the driver, so the job runs
unchanged under ``local[*]`` and in a cluster's driver. Parallel work (snapshots, GTID-range
catch-up) is where Spark executors come in.

Exit codes: 0 done; 2 configuration error; 3 another writer holds the pipeline; 4 the lake and
the requested start disagree; 5 the binlog needed is gone or unreadable; 1 anything else.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from airflow_mysql_cdc.engine.apply_config import ApplyConfig, ApplyConfigError
from airflow_mysql_cdc.engine.apply_loop import run_apply
from airflow_mysql_cdc.engine.binlog_errors import BinlogReaderError
from airflow_mysql_cdc.engine.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.sinks.interface import SinkBehindError, SinkDivergedError
from airflow_mysql_cdc.engine.sinks.pipeline_state import PipelineFencedError

EXIT_CONFIG, EXIT_FENCED, EXIT_SINK_MISMATCH, EXIT_BINLOG = 2, 3, 4, 5
ERROR_PREFIX = "airflow-mysql-cdc ERROR"


def write_result_atomically(path: Path, payload: dict) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(payload, indent=2))
    os.replace(temporary, path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Apply MySQL binlog changes to Delta tables")
    parser.add_argument("--config", required=True, type=Path, help="ApplyConfig JSON file")
    parser.add_argument("--result-file", required=True, type=Path, help="where the result JSON goes")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        config = ApplyConfig.from_file(args.config)
        endpoint = MySqlEndpoint.from_environment()
    except (ApplyConfigError, LookupError, ValueError) as error:
        print(f"{ERROR_PREFIX} configuration: {error}", file=sys.stderr)
        return EXIT_CONFIG
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
        result = run_apply(config, endpoint, stop_requested=stop_requested)
    except PipelineFencedError as error:
        print(f"{ERROR_PREFIX} fenced: {error}", file=sys.stderr)
        return EXIT_FENCED
    except (SinkBehindError, SinkDivergedError) as error:
        print(f"{ERROR_PREFIX} lake/start mismatch: {error}", file=sys.stderr)
        return EXIT_SINK_MISMATCH
    except BinlogReaderError as error:
        print(f"{ERROR_PREFIX} binlog: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_BINLOG
    write_result_atomically(args.result_file, result.to_dict())
    return 0


def exit_hard(entry: Callable[[], int]) -> None:
    """Run an entry point and leave without interpreter finalisation.

    Native threads of pyarrow/delta-rs can abort the process ("terminate called without an active
    exception", SIGABRT) while Python tears down after main() returned, turning a finished run into
    a failed one (seen in test_kill_9_at_random_moments_then_rerun_gives_the_exact_lake). Everything
    durable is committed and the result file renamed before this point, so exiting hard is safe.
    """
    code = entry()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_and_exit() -> None:
    exit_hard(main)


if __name__ == "__main__":
    run_and_exit()
