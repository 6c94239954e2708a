"""The engine's error model: one root, and the class alone decides the exit code and retry."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import airflow_mysql_cdc.engine as engine
from airflow_mysql_cdc.engine.apply.admission import TableAdmissionError
from airflow_mysql_cdc.engine.apply.config import ApplyConfigError
from airflow_mysql_cdc.engine.binlog.errors import BinlogPurgedError, ConnectionLostError
from airflow_mysql_cdc.engine.errors import CdcError, ExitCode
from airflow_mysql_cdc.engine.lake.sink import SinkBehindError, SinkDivergedError
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineBusyError, PipelineFencedError
from airflow_mysql_cdc.engine.snapshot.chunks import NoRowKeyError, TableNotFoundError
from airflow_mysql_cdc.engine.snapshot.lake_commits import SnapshotIncompleteError


def _engine_modules() -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages(engine.__path__, prefix=engine.__name__ + ".")
        if ".entrypoints." not in info.name
    ]


def test_every_exception_class_the_engine_defines_derives_from_the_one_root() -> None:
    strays = []
    for name in _engine_modules():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and issubclass(cls, BaseException) and not issubclass(cls, CdcError):
                strays.append(f"{name}.{cls.__name__}")
    assert strays == [], f"engine errors outside CdcError: {strays}"


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ApplyConfigError, ExitCode.CONFIGURATION),
        (NoRowKeyError, ExitCode.CONFIGURATION),
        (TableNotFoundError, ExitCode.CONFIGURATION),
        (PipelineFencedError, ExitCode.FENCED),
        (PipelineBusyError, ExitCode.FENCED),
        (SinkBehindError, ExitCode.LAKE_MISMATCH),
        (SinkDivergedError, ExitCode.LAKE_MISMATCH),
        (TableAdmissionError, ExitCode.LAKE_MISMATCH),
        (SnapshotIncompleteError, ExitCode.LAKE_MISMATCH),
        (BinlogPurgedError, ExitCode.BINLOG),
        (ConnectionLostError, ExitCode.BINLOG),
        (CdcError, ExitCode.FAILED),
    ],
)
def test_the_error_class_sets_the_exit_code(error: type[CdcError], code: ExitCode) -> None:
    assert error.exit_code is code


def test_only_a_crash_and_a_held_lease_are_worth_a_retry() -> None:
    assert {code for code in ExitCode if code.retryable} == {ExitCode.FAILED, ExitCode.FENCED}
    for code in ExitCode:
        assert code.meaning and code.label


def test_errors_keep_their_builtin_base_for_callers_that_catch_it() -> None:
    assert isinstance(ApplyConfigError("x"), ValueError)
    assert isinstance(TableNotFoundError("x"), LookupError)
    assert isinstance(PipelineFencedError("x"), RuntimeError)
