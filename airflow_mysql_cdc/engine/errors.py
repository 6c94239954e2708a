"""The engine's error model: one root, and what each kind of error means for the run that met it.

Invariant: every error the engine raises on purpose derives from :class:`CdcError`, and its class alone
decides the application's exit code and whether a retry can help. The entry points print the error
and exit with ``error.exit_code``; the Airflow operator reads the same :class:`ExitCode` to fail the
task at once (no retry can fix it) or to let Airflow retry it. There is no second table to keep in
step.

Why these four kinds: a retry of the same task helps only when something outside it changes (the
other writer's lease expires, a connection comes back). A wrong configuration, a lake that disagrees
with the requested start, or a binlog that can no longer be read from the checkpoint stay wrong
however often the task runs; retrying them only hides the message a data engineer must act on.

Errors that derive from :class:`CdcError` alone keep :attr:`ExitCode.FAILED`, the code Python exits
with on an unexpected exception, so they are retried like any crash. Each error class also keeps
the built-in base it had (``ValueError``, ``RuntimeError``, ...), so callers that catch those still do.

Words at the edge: the engine's messages name tables, positions and the action by what it does
("re-snapshot shop.orders", "run the segment again"), never a DAG, a task, an operator or a run conf:
what the engine asks of a user is the same under any scheduler. An error whose remedy is one of these
actions carries it as a typed :class:`NextStep` (:meth:`CdcError.then`); an entry point prints it on
its own line after the error line (:meth:`NextStep.line`), and the Airflow side finds it in the
application's output (:meth:`NextStep.in_line`) and adds how to do it in Airflow
(:mod:`airflow_mysql_cdc.hooks.next_steps`). Guarded by tests/unit/test_next_steps.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import ClassVar, Self

ERROR_PREFIX = "airflow-mysql-cdc ERROR"
"""Starts the one line an entry point prints for the error that ended it (``<prefix> <label>: <Class>:
<message>``); the Airflow hook finds it in spark-submit's output and makes it the task's failure reason."""


class ExitCode(IntEnum):
    """An application's exit code, what it means, and whether a retry can help."""

    OK = 0
    FAILED = 1
    CONFIGURATION = 2
    FENCED = 3
    LAKE_MISMATCH = 4
    BINLOG = 5

    @property
    def retryable(self) -> bool:
        """True when running the same task again can succeed without anyone changing anything."""
        return self in (ExitCode.FAILED, ExitCode.FENCED)

    @property
    def meaning(self) -> str:
        """What the code says, in the words the task log and docs use."""
        return _MEANINGS[self]

    @property
    def label(self) -> str:
        """The short word the entry points print after their error prefix."""
        return _LABELS[self]


_MEANINGS = {
    ExitCode.OK: "success",
    ExitCode.FAILED: "unexpected failure (a retry may help)",
    ExitCode.CONFIGURATION: "configuration error",
    ExitCode.FENCED: "another run holds the pipeline's lease",
    ExitCode.LAKE_MISMATCH: "the lake and the requested start disagree, or a table cannot join",
    ExitCode.BINLOG: (
        "the binlog cannot be applied from the checkpoint (purged, another server's history, or a "
        "change the run must stop at, such as DDL with schema_changes: stop or a statement-logged change "
        "with statement_changes: stop; the application's error line says which)"
    ),
}
_LABELS = {
    ExitCode.OK: "ok",
    ExitCode.FAILED: "failed",
    ExitCode.CONFIGURATION: "configuration",
    ExitCode.FENCED: "fenced",
    ExitCode.LAKE_MISMATCH: "lake/start mismatch",
    ExitCode.BINLOG: "binlog",
}


NEXT_STEP_PREFIX = "airflow-mysql-cdc NEXT STEP"
"""Starts the line an entry point prints after its error line when the error names a next step."""


class Step(Enum):
    """An action a user takes, by its meaning."""

    RESNAPSHOT = "resnapshot"
    """Snapshot the tables again, replacing their lake copies (no tables named: every table)."""
    RUN_AGAIN = "run_again"
    """Run the same segment again once the cause is fixed: what was applied is in the lake."""


@dataclass(frozen=True)
class NextStep:
    """``step`` for ``tables`` (schema.table names; empty: not table-specific, or every table)."""

    step: Step
    tables: tuple[str, ...] = ()

    @classmethod
    def resnapshot(cls, *tables: object) -> NextStep:
        return cls(Step.RESNAPSHOT, tuple(str(table) for table in tables))

    @classmethod
    def run_again(cls) -> NextStep:
        return cls(Step.RUN_AGAIN)

    def line(self) -> str:
        """The line an entry point prints (one line: JSON after the prefix)."""
        return f"{NEXT_STEP_PREFIX} {json.dumps({'step': self.step.value, 'tables': list(self.tables)})}"

    @classmethod
    def in_line(cls, line: str) -> NextStep | None:
        """The next step a line of an application's output names (None: none, or a garbled line)."""
        start = line.find(NEXT_STEP_PREFIX)
        if start < 0:
            return None
        try:
            data = json.loads(line[start + len(NEXT_STEP_PREFIX) :])
            return cls(Step(data["step"]), tuple(str(table) for table in data.get("tables", ())))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


class CdcError(Exception):
    """Root of every error the engine raises on purpose; the class sets the exit code."""

    exit_code: ClassVar[ExitCode] = ExitCode.FAILED
    next_step: NextStep | None = None
    """What the user does about it, by meaning (None: the message alone says; see the module doc)."""

    def then(self, step: NextStep) -> Self:
        """This error, naming ``step`` as what to do next."""
        self.next_step = step
        return self

    @property
    def retryable(self) -> bool:
        return self.exit_code.retryable


class ConfigurationError(CdcError):
    """The run's configuration cannot work: fix it (or the source it names), then rerun."""

    exit_code = ExitCode.CONFIGURATION


class FencedError(CdcError):
    """Another run holds the pipeline: this one stops before writing, and a later retry may proceed."""

    exit_code = ExitCode.FENCED


class LakeMismatchError(CdcError):
    """The lake and the requested start disagree, or a table cannot join at this position."""

    exit_code = ExitCode.LAKE_MISMATCH


class BinlogError(CdcError):
    """The binlog cannot be read (on) from the checkpoint: purged, rejected, or holding what we refuse."""

    exit_code = ExitCode.BINLOG
