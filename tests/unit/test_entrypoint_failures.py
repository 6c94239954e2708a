"""What an application prints and exits with when its work fails: an engine error or a refused login
has a message a user acts on and the exit code its kind sets; anything else keeps its traceback."""

from __future__ import annotations

from pathlib import Path

import pymysql
import pytest

from airflow_mysql_cdc.engine.entrypoints.common import run_to_result_file
from airflow_mysql_cdc.engine.errors import ERROR_PREFIX, ExitCode, NextStep


def _failing(error: Exception):
    def work() -> dict:
        raise error

    return work


@pytest.mark.parametrize("code", [1044, 1045, 1130])
def test_a_login_refused_while_the_application_runs_says_what_changed_and_is_not_retried(
    tmp_path: Path, capsys: pytest.CaptureFixture, code: int
) -> None:
    refused = pymysql.err.OperationalError(
        code, "Access denied for user 'cdc'@'10.0.0.7' (using password: YES)"
    )
    result_file = tmp_path / "result.json"
    assert run_to_result_file(_failing(refused), result_file) is ExitCode.CONFIGURATION
    printed = capsys.readouterr().err
    assert printed.startswith(f"{ERROR_PREFIX} {ExitCode.CONFIGURATION.label}: MySqlLoginError:")
    assert "refused a login of this application while it ran (Access denied for user 'cdc'" in printed
    assert (
        "Update the credentials the run uses (or restore the account), then run the segment again" in printed
    )
    assert NextStep.run_again().line() in printed  # the operator adds how: clear this task
    assert "Traceback" not in printed and not result_file.exists()


def test_another_driver_error_keeps_its_traceback(tmp_path: Path) -> None:
    lost = pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")
    with pytest.raises(pymysql.err.OperationalError, match="Lost connection"):
        run_to_result_file(_failing(lost), tmp_path / "result.json")
