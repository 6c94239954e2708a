"""spark-submit's output in the task log: each line at its own level, Spark's start-up chatter gone.

Invariant: a line of spark-submit's output reaches the task log at the level its writer gave it
(log4j's ``WARN`` as a warning, ``ERROR`` as an error), and an error is never dropped: what is
filtered is filtered at the source, by log level, where the user can turn it back on.

Why: the provider logs every line at INFO. A first run's log was 98 lines, 61 of them Spark's
start-up INFO chatter (``SecurityManager: Changing view acls``, ``BlockManagerMaster: Registering``,
...), and Spark's WARN lines sat at INFO between them (issue 26). Now:

- Spark's own loggers log from WARN up (:data:`LOG4J2_CONFIGURATION`, given to the driver's JVM in
  ``LOG4J_CONFIGURATION_FILE``, which log4j2 reads like its ``log4j2.configurationFile`` property),
  unless the user has a log4j2 configuration of their own (:func:`log4j_environment`).
- :class:`OutputLevels` reads each line's level: log4j's pattern (``26/11/26 13:07:24 WARN Utils:
  ...``), Python logging's (the engine's ``2026-11-26 13:07:33,032 INFO airflow_mysql_cdc.snapshot:
  ...``), a Python warning (``...: FutureWarning: ...``), the application's error line
  (:data:`~airflow_mysql_cdc.engine.errors.ERROR_PREFIX`). A stack trace's line (``\tat ...``,
  ``Caused by: ...``, a Python traceback) keeps the level of the warning or error it belongs to, so
  a trace stays in one piece at the level of its message. Any other line is INFO.
- The JVM's banner lines that say nothing actionable (:data:`JVM_CHATTER`) and py4j's INFO lines
  are DEBUG: shown with ``[logging] logging_level = DEBUG``.

Guarded by ``tests/unit/airflow/hooks/test_spark_output.py`` and, on a real run, by the daily
pipeline test's count of the first run's ``replicate`` log lines.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from airflow_mysql_cdc.engine.errors import ERROR_PREFIX
from airflow_mysql_cdc.hooks.spark_distribution import spark_conf_folder

LOG4J2_CONFIGURATION = Path(__file__).with_name("log4j2-applications.properties")
"""Spark's loggers at WARN, in Spark's default pattern (the file says why)."""
LOG4J_CONFIGURATION_VARIABLE = "LOG4J_CONFIGURATION_FILE"
_LOG4J_VARIABLES = (LOG4J_CONFIGURATION_VARIABLE, "LOG4J2_CONFIGURATIONFILE")
_LOG4J_PROPERTY = re.compile(r"-Dlog4j2?\.configurationFile=", re.IGNORECASE)
_LOG4J_FILES = ("log4j2.properties", "log4j2.xml", "log4j2.yaml", "log4j2.yml", "log4j2.json")

_LEVELS = {
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "CRITICAL": logging.CRITICAL,
}
_LEVEL_WORDS = "|".join(_LEVELS)
_LOG4J_LINE = re.compile(rf"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d ({_LEVEL_WORDS}) ")
_PYTHON_LINE = re.compile(rf"^\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d{{3}} ({_LEVEL_WORDS}) (\S+): ")
_PYTHON_WARNING = re.compile(r":\d+: \w*Warning: ")
_CONTINUATION = re.compile(
    r"^(\s|Caused by|Suppressed:|Traceback |During handling|The above exception|\.\.\. \d+ more"
    r"|[\w.$]+(Error|Exception|Exit)\b)"
)
"""A line that continues the one before it: a Java stack frame or cause, a Python traceback line."""
JVM_CHATTER = (
    "WARNING: Using incubator modules:",
    "Using Spark's default log4j profile:",
)
"""Lines the JVM prints on every start, before any logging is configured."""
_CHATTY_PYTHON_LOGGERS = ("py4j",)


def _user_configures_log4j(environment: Mapping[str, str], spark_conf: Mapping[str, Any]) -> bool:
    """Whether the user gave log4j2 a configuration of their own: in the environment, in the driver's
    Java options, or as a file in the Spark distribution's configuration folder."""
    if any(name.upper() in _LOG4J_VARIABLES for name in environment):
        return True
    java_options = (spark_conf.get("spark.driver.extraJavaOptions"), environment.get("SPARK_SUBMIT_OPTS"))
    options = " ".join(str(option) for option in java_options if option)
    if _LOG4J_PROPERTY.search(options):
        return True
    folder = spark_conf_folder(environment)
    return folder is not None and any(os.path.isfile(os.path.join(folder, name)) for name in _LOG4J_FILES)


def log4j_environment(environment: Mapping[str, str], spark_conf: Mapping[str, Any]) -> dict[str, str]:
    """The variable that gives the driver's JVM :data:`LOG4J2_CONFIGURATION`, or nothing when the
    user configures log4j2 themselves (theirs wins, as it would without this package)."""
    if _user_configures_log4j(environment, spark_conf):
        return {}
    return {LOG4J_CONFIGURATION_VARIABLE: str(LOG4J2_CONFIGURATION)}


class OutputLevels:
    """The task-log level of each line of one spark-submit's output, in order (see the module)."""

    def __init__(self) -> None:
        self._last = logging.INFO

    def level_of(self, line: str) -> int:
        if ERROR_PREFIX in line:
            self._last = logging.ERROR
            return logging.ERROR
        if line.startswith(JVM_CHATTER):
            return logging.DEBUG
        if match := _LOG4J_LINE.match(line):
            self._last = _LEVELS[match.group(1)]
            return self._last
        if match := _PYTHON_LINE.match(line):
            level = _LEVELS[match.group(1)]
            if level <= logging.INFO and match.group(2).startswith(_CHATTY_PYTHON_LOGGERS):
                level = logging.DEBUG
            self._last = level
            return level
        if _PYTHON_WARNING.search(line):
            self._last = logging.WARNING
            return logging.WARNING
        if _CONTINUATION.match(line):
            return self._last if self._last >= logging.WARNING else logging.INFO
        self._last = logging.INFO
        return logging.INFO
