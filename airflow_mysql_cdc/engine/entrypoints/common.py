"""What every entry point shares: arguments, logging, exit codes, the result file, a hard exit."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

EXIT_CONFIG, EXIT_FENCED, EXIT_SINK_MISMATCH, EXIT_BINLOG = 2, 3, 4, 5
ERROR_PREFIX = "airflow-mysql-cdc ERROR"


def write_result_atomically(path: Path, payload: dict) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(payload, indent=2))
    os.replace(temporary, path)


def argument_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", required=True, type=Path, help="configuration JSON file")
    parser.add_argument("--result-file", required=True, type=Path, help="where the result JSON goes")
    return parser


def configure_logging() -> None:
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


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
