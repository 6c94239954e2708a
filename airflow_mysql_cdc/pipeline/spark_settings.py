"""The pipeline JSON's ``spark`` object: how the replicate task runs Spark, validated at DAG parse.

Invariant: every Spark setting a deployment needs can be given here, with no code and no global
``spark-defaults.conf``; a wrong key or value fails the DAG file's parse with an error that names
the key (``spark.executor_memory: ...``). The named settings become Spark properties
(:meth:`SparkSettings.spark_conf`); ``conf`` is merged over them, so an explicit property wins.
Guarded by ``tests/unit/airflow/pipeline/test_spark_settings.py``.

The driver's Python is the Airflow worker's interpreter unless ``driver_python`` says otherwise
(:func:`~airflow_mysql_cdc.hooks.spark_defaults.driver_conf`): ``spark.pyspark.python``
alone would also choose the driver's, which then lacks the package.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field, fields
from typing import Any

_MEMORY = re.compile(r"^\d+[kmgtp]?b?$", re.IGNORECASE)
_SECRET_NAME = re.compile(r"secret|password|token|credential", re.IGNORECASE)
_NAMED_PROPERTIES = {
    "executor_python": "spark.pyspark.python",
    "driver_python": "spark.pyspark.driver.python",
    "executor_memory": "spark.executor.memory",
    "executor_cores": "spark.executor.cores",
    "num_executors": "spark.executor.instances",
    "driver_memory": "spark.driver.memory",
    "kubernetes_image": "spark.kubernetes.container.image",
    "kubernetes_namespace": "spark.kubernetes.namespace",
}


class SparkSettingsError(ValueError):
    """A key or value of the pipeline JSON's ``spark`` object is wrong."""


@dataclass(frozen=True)
class SparkSettings:
    """What the JSON's ``spark`` object may hold (every key optional)."""

    conf: dict[str, str] = field(default_factory=dict)
    """Spark properties, merged over the named settings below (and over the Spark connection's)."""
    executor_python: str | None = None
    driver_python: str | None = None
    executor_memory: str | None = None
    executor_cores: int | None = None
    num_executors: int | None = None
    driver_memory: str | None = None
    kubernetes_image: str | None = None
    kubernetes_namespace: str | None = None
    py_files: tuple[str, ...] = ()
    """Extra Python files for the executors (after the engine's own archive)."""
    files: tuple[str, ...] = ()
    archives: tuple[str, ...] = ()
    """E.g. a packed virtualenv for the executors: ``"pyenv.tar.gz#environment"``."""
    execution_timeout_minutes: float | None = None
    """The replicate task's Airflow ``execution_timeout``; the whole application is killed at it."""

    @classmethod
    def from_dict(cls, data: Any) -> SparkSettings:
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise SparkSettingsError(f"spark must be a JSON object, not {data!r}")
        known = {item.name for item in fields(cls)}
        if unknown := sorted(set(data) - known):
            raise SparkSettingsError(
                f"unknown key(s) in spark: {', '.join(unknown)} (known: {', '.join(sorted(known))}; "
                "any Spark property goes in spark.conf)"
            )
        values = dict(data)
        conf = values.get("conf", {})
        if not isinstance(conf, dict) or not all(isinstance(k, str) for k in conf):
            raise SparkSettingsError(f"spark.conf must map Spark property names to values, not {conf!r}")
        for key, value in conf.items():
            if not isinstance(value, str | int | float | bool):
                raise SparkSettingsError(
                    f"spark.conf.{key}: a Spark property's value is text or a number, not {value!r}"
                )
        values["conf"] = {key: _text(value) for key, value in conf.items()}
        for key in ("py_files", "files", "archives"):
            values[key] = _paths(values.get(key, ()), key)
        settings = cls(**values)
        settings._check()
        return settings

    def _check(self) -> None:
        for key in ("executor_python", "driver_python", "kubernetes_image", "kubernetes_namespace"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise SparkSettingsError(f"spark.{key} must be a non-empty string, not {value!r}")
        for key in ("executor_memory", "driver_memory"):
            value = getattr(self, key)
            if value is not None and not (isinstance(value, str) and _MEMORY.match(value)):
                raise SparkSettingsError(
                    f"spark.{key} is a Spark memory size such as '4g' or '512m', not {value!r}"
                )
        for key in ("executor_cores", "num_executors"):
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise SparkSettingsError(f"spark.{key} must be a positive whole number, not {value!r}")
        minutes = self.execution_timeout_minutes
        if minutes is not None and (
            isinstance(minutes, bool) or not isinstance(minutes, int | float) or minutes <= 0
        ):
            raise SparkSettingsError(
                f"spark.execution_timeout_minutes must be a positive number, not {minutes!r}"
            )
        if secret := next((key for key in self.conf if _names_a_secret(key)), None):
            raise SparkSettingsError(
                f"spark.conf.{secret}: a secret does not belong in the pipeline JSON, whose spark.conf goes "
                "on the spark-submit command line (readable by every user of the worker); put it in the "
                "Spark distribution's spark-defaults.conf on the worker and the cluster's nodes"
            )
        if str(self.conf.get("spark.submit.deployMode", "client")).lower() != "client":
            raise SparkSettingsError(
                "spark.conf.spark.submit.deployMode: only client mode runs (the driver holds the "
                "pipeline's lease and secrets on the Airflow worker); remove the key"
            )

    def spark_conf(self) -> dict[str, str]:
        """The named settings as Spark properties, with ``conf`` merged over them."""
        named = {
            prop: _text(getattr(self, key))
            for key, prop in _NAMED_PROPERTIES.items()
            if getattr(self, key) is not None
        }
        return {**named, **self.conf}

    def py_files_argument(self) -> str | None:
        return ",".join(self.py_files) or None

    def execution_timeout(self) -> datetime.timedelta | None:
        minutes = self.execution_timeout_minutes
        return datetime.timedelta(minutes=minutes) if minutes is not None else None


def _names_a_secret(key: str) -> bool:
    """A property that holds a secret itself (not the class or file that provides one)."""
    return bool(_SECRET_NAME.search(key)) and not key.lower().endswith(("provider", "file", "filename"))


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _paths(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) and item for item in value):
        raise SparkSettingsError(f"spark.{key} must be a list of paths or URIs, not {value!r}")
    return tuple(value)
