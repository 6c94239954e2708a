"""What the Spark distribution spark-submit runs from configures: its configuration folder, its files.

spark-submit reads ``$SPARK_CONF_DIR`` (or ``$SPARK_HOME/conf``): ``spark-env.sh``,
``spark-defaults.conf``, a ``log4j2.properties``. The hook's checks accept a setting made there as
well as one made through Airflow (:mod:`.spark_submit`, :mod:`.spark_output`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def spark_conf_folder(environment: Mapping[str, str]) -> str | None:
    """The Spark distribution's configuration folder spark-submit reads, if any."""
    return environment.get("SPARK_CONF_DIR") or (
        os.path.join(environment["SPARK_HOME"], "conf") if environment.get("SPARK_HOME") else None
    )


def spark_conf_file_mentions(environment: Mapping[str, str], name: str, keys: tuple[str, ...]) -> bool:
    """Whether the Spark distribution's configuration file ``name`` sets one of ``keys``."""
    folder = spark_conf_folder(environment)
    if folder is None:
        return False
    try:
        with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as file:
            text = file.read()
    except OSError:
        return False
    return any(
        line.strip().split("#", 1)[0].replace("export ", "").lstrip().startswith(key)
        for line in text.splitlines()
        for key in keys
    )


def pyspark_version() -> str:
    try:
        from importlib.metadata import version

        return version("pyspark")
    except Exception:  # noqa: BLE001 - only a hint in a message
        return "of the driver's version"
