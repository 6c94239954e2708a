"""spark-submit's output in the task log: each line at its writer's level, Spark's chatter gone."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.errors import ERROR_PREFIX
from airflow_mysql_cdc.hooks.spark_output import (
    LOG4J2_CONFIGURATION,
    LOG4J_CONFIGURATION_VARIABLE,
    OutputLevels,
    log4j_environment,
)

# Lines of a real first run's replicate log (issue 26), in order.
FIRST_RUN = [
    ("WARNING: Using incubator modules: jdk.incubator.vector", logging.DEBUG),
    ("Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties", logging.DEBUG),
    ("26/11/26 13:07:24 WARN Utils: Your hostname, vm, resolves to a loopback address: 127.0.0.1; using "
     "192.0.2.2 instead (on interface eth0)", logging.WARNING),
    ("/venv/pyspark/testing/utils.py:127: FutureWarning: PySpark does not yet fully support pandas >= 3.0.0.",
     logging.WARNING),
    ("  warnings.warn(", logging.WARNING),
    ("26/11/26 13:07:28 INFO SparkContext: Running Spark version 4.2.0", logging.INFO),
    ("2026-11-26 13:07:32,890 INFO py4j.clientserver: Closing down clientserver connection", logging.DEBUG),
    ("2026-11-26 13:07:33,032 INFO airflow_mysql_cdc.snapshot: snapshot of s.orders: 3 chunk(s) of up to 60 "
     "rows planned", logging.INFO),
    ("2026-11-26 13:07:36,540 WARNING airflow_mysql_cdc.apply: s.orders is not streamed: paused",
     logging.WARNING),
    ("some line the application printed", logging.INFO),
]  # fmt: skip


def test_each_line_of_a_first_run_gets_its_writers_level() -> None:
    levels = OutputLevels()
    assert [(line, levels.level_of(line)) for line, _ in FIRST_RUN] == FIRST_RUN


def test_a_spark_error_and_its_stack_trace_stay_errors_and_the_next_line_is_info_again() -> None:
    levels = OutputLevels()
    trace = [
        "26/11/26 13:07:40 ERROR Executor: Exception in task 0.0 in stage 1.0 (TID 1)",
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):",
        '  File "/venv/pyspark/worker.py", line 1, in main',
        "ValueError: boom",
        "\tat org.apache.spark.api.python.BasePythonRunner.handle(PythonRunner.scala:572)",
        "Caused by: java.io.EOFException",
        "\t... 12 more",
    ]
    assert [levels.level_of(line) for line in trace] == [logging.ERROR] * len(trace)
    assert levels.level_of("rows 3") == logging.INFO


def test_the_applications_error_line_is_an_error_wherever_it_appears() -> None:
    line = f"{ERROR_PREFIX} binlog: StatementBasedChangeError: a statement-logged change of s.orders"
    levels = OutputLevels()
    assert levels.level_of(line) == logging.ERROR
    assert levels.level_of("26/11/26 13:07:24 FATAL SparkContext: gone") == logging.CRITICAL
    assert levels.level_of("26/11/26 13:07:24 DEBUG Utils: detail") == logging.DEBUG


def test_the_driver_gets_the_packaged_log4j2_configuration_keeping_spark_at_warn() -> None:
    assert log4j_environment({}, {}) == {LOG4J_CONFIGURATION_VARIABLE: str(LOG4J2_CONFIGURATION)}
    text = LOG4J2_CONFIGURATION.read_text()
    assert "rootLogger.level = warn" in text
    assert "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex" in text


@pytest.mark.parametrize(
    "environment, spark_conf",
    [
        ({"LOG4J_CONFIGURATION_FILE": "/etc/mine.properties"}, {}),
        ({}, {"spark.driver.extraJavaOptions": "-Xss4m -Dlog4j2.configurationFile=/etc/mine.properties"}),
        ({"SPARK_SUBMIT_OPTS": "-Dlog4j.configurationFile=/etc/mine.xml"}, {}),
    ],
)
def test_a_users_own_log4j2_configuration_wins(environment: dict, spark_conf: dict) -> None:
    assert log4j_environment(environment, spark_conf) == {}


def test_a_log4j2_file_in_the_spark_configuration_folder_wins(tmp_path: Path) -> None:
    assert log4j_environment({"SPARK_CONF_DIR": str(tmp_path)}, {}) != {}
    (tmp_path / "log4j2.properties").write_text("rootLogger.level = info\n")
    assert log4j_environment({"SPARK_CONF_DIR": str(tmp_path)}, {}) == {}
    assert log4j_environment({"SPARK_HOME": str(tmp_path.parent), "X": "1"}, {}) != {}
