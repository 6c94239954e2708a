"""What every Spark application of the package runs with, unless the user's configuration says
otherwise: the driver's Python, Spark's UI off, local-disk encryption on; and the driver's
environment besides its secrets.

Invariant: a setting the user gives (the pipeline JSON's ``spark.conf``, an operator's
``spark_conf``) always wins over these defaults, which only make a run safe and working when nothing
is said. Used by :mod:`airflow_mysql_cdc.operators.spark_application` to start an application and by
:mod:`airflow_mysql_cdc.operators.links` to find its Spark UI; guarded by
tests/unit/airflow/pipeline/test_spark_settings.py.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from airflow_mysql_cdc.engine.runtime.spark_tasks import LOCAL_DISK_ENCRYPTION_CONF


def driver_environment() -> dict[str, str]:
    """What the local driver and its Python workers need besides the secrets: this interpreter.

    ``PATH`` ends with this interpreter's folder, where pip puts pyspark's ``spark-submit``: a
    Spark distribution already on ``PATH`` (the cluster's client, ``$SPARK_HOME/bin``) wins.
    """
    return {
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONUNBUFFERED": "1",
        "PATH": os.environ.get("PATH", "") + os.pathsep + str(Path(sys.executable).parent),
    }


def driver_conf(spark_conf: Mapping[str, Any] | None) -> dict[str, Any]:
    """``spark_conf`` over the defaults every application of the package runs with.

    - The driver's Python is this interpreter unless ``spark_conf`` names one:
      ``spark.pyspark.python`` (the executors' Python) would otherwise also choose the driver's, and
      win over ``PYSPARK_DRIVER_PYTHON``: a driver without the package fails at once.
    - Spark's web UI is off (``spark.ui.enabled=false``) unless ``spark_conf`` turns it on: it would
      listen on every interface of the Airflow worker (0.0.0.0:4040 and up), without
      authentication, for every run. The applications log their own progress; a user who wants
      the UI sets ``"spark.ui.enabled": "true"`` in the pipeline JSON's ``spark.conf``
      (docs/configuration.md says how to keep it private).
    - Spark's local-disk encryption is on (``spark.io.encryption.enabled=true``) unless ``spark_conf``
      turns it off: the broadcast that carries the credentials to the executors
      (:mod:`~airflow_mysql_cdc.engine.runtime.executor_secrets`) leaves a file in each executor's
      and in the driver's local folder; with it on, the file is ciphertext whose key only the
      application's JVMs hold. Set here, not in the application: under spark-submit, PySpark's
      ``SparkConf`` does not see ``--conf`` before the context starts, so a default set there would
      override a user's ``false`` (seen in issue 34).
    """
    return {
        "spark.pyspark.driver.python": sys.executable,
        "spark.ui.enabled": "false",
        LOCAL_DISK_ENCRYPTION_CONF: "true",
        **(spark_conf or {}),
    }
