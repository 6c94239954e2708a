"""What every entry point shares: arguments, logging, error reports, the result file, a hard exit.

Exit codes come from the error's class (:mod:`airflow_mysql_cdc.engine.errors`), never from a table
kept here: :func:`exit_code_of` prints what happened and returns ``error.exit_code``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pymysql

from airflow_mysql_cdc.engine.errors import ERROR_PREFIX, CdcError, ExitCode, NextStep
from airflow_mysql_cdc.engine.lake.storage import secret_storage_options_from_environment
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.tls import MySqlLoginError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

CONFIGURATION_FAILURES = (CdcError, LookupError, ValueError, TypeError)
"""What reading a configuration and the environment may raise: every one of them is a configuration error."""

Config = TypeVar("Config", bound="DataclassInstance")
LOGIN_REFUSED = (1044, 1045, 1130)
"""Access denied to the database, access denied, host not allowed: the account or password changed."""


def read_configuration(
    read_file: Callable[[Path], Config], path: Path
) -> tuple[Config, MySqlEndpoint] | ExitCode:
    """The config file, with the lake's secret storage options and the endpoint from the environment.

    Returns the configuration error's exit code instead (printed for the task log): the config file
    holds nothing secret, and the secrets never reach argv (see the entry points' docstrings).
    """
    try:
        config = read_file(path)
        config = replace(config, secret_storage_options=secret_storage_options_from_environment())
        return config, MySqlEndpoint.from_environment()
    except CONFIGURATION_FAILURES as error:
        return configuration_exit_code(error)


def exit_code_of(error: CdcError) -> ExitCode:
    """Print ``error`` for the task log (the operator shows this line) and return its exit code.

    An error that keeps :attr:`ExitCode.FAILED` is unexpected, so its traceback is logged too.
    """
    if error.exit_code is ExitCode.FAILED:
        logging.getLogger("airflow_mysql_cdc").error("unexpected failure", exc_info=error)
    print(f"{ERROR_PREFIX} {error.exit_code.label}: {type(error).__name__}: {error}", file=sys.stderr)
    if error.next_step is not None:  # the Airflow side adds how to take it (engine/errors.py)
        print(error.next_step.line(), file=sys.stderr)
    return error.exit_code


def login_refused_while_running(error: pymysql.err.OperationalError) -> MySqlLoginError | None:
    """What to do when the source refuses a login the application opens while it runs (a reconnect,
    a new connection), None for any other error.

    The task checked the login before it started the application, so the account or its password
    changed since (a rotation, a dropped account): a retry would be refused the same way, hence a
    configuration error (no retries) with the fix, not the driver's raw error and a traceback."""
    if not error.args or error.args[0] not in LOGIN_REFUSED:
        return None
    return MySqlLoginError(
        f"the MySQL server refused a login of this application while it ran ({error.args[-1]}): the "
        "password or the account changed after the run checked the connection (a password rotation, "
        "a dropped or altered account). Update the credentials the run uses (or restore the account), "
        "then run the segment again: what was applied is in the lake, and the next attempt continues "
        "from there."
    ).then(NextStep.run_again())


def exit_code_of_running_failure(error: Exception) -> ExitCode:
    """The exit code of an error that ended an application's work (printed for the task log); an
    error without one (a bug, an unexpected driver error) is raised again, traceback and all."""
    if isinstance(error, CdcError):
        return exit_code_of(error)
    if isinstance(error, pymysql.err.OperationalError) and (refused := login_refused_while_running(error)):
        return exit_code_of(refused)
    raise error


def configuration_exit_code(error: Exception) -> ExitCode:
    """Print an error met while reading the configuration; it always means the configuration is wrong."""
    print(f"{ERROR_PREFIX} {ExitCode.CONFIGURATION.label}: {error}", file=sys.stderr)
    return ExitCode.CONFIGURATION


def run_to_result_file(work: Callable[[], dict], result_file: Path) -> ExitCode:
    """Run the application's ``work``; its result file appears only after the work is done.

    An engine error is printed for the task log and becomes the exit code its class sets.
    """
    try:
        result = work()
    except (CdcError, pymysql.err.OperationalError) as error:
        return exit_code_of_running_failure(error)
    write_result_atomically(result_file, result)
    return ExitCode.OK


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
    """The application's own lines at INFO, in the form the Airflow hook reads each line's level from
    (:mod:`airflow_mysql_cdc.hooks.spark_output`); py4j's INFO lines ("Closing down clientserver
    connection", several per run) say nothing a user acts on, so they start at WARNING."""
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)


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
