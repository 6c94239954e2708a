"""The Spark provider's OpenLineage injection, for our spark-submit: parent job and transport.

Like the apache-spark provider's ``SparkSubmitOperator``, an application operator can add to its
Spark properties

- the parent job (``spark.openlineage.parentJobNamespace``, ``parentJobName``, ``parentRunId``...),
  so the OpenLineage Spark listener's events name the Airflow task that started the application;
- the OpenLineage transport of this Airflow (``spark.openlineage.transport.*``), so the listener
  sends its events where Airflow sends its own.

Both default from ``[openlineage] spark_inject_parent_job_info`` / ``spark_inject_transport_info``
(false), and use the provider's own injection functions (through the common.compat provider, which
logs and skips them when the OpenLineage provider is not installed).

Invariant: no secret reaches spark-submit's argv. The transport may carry an API key
(``spark.openlineage.transport.auth.apiKey``) or custom headers (an ``Authorization`` header): every
``auth.*`` and ``headers.*`` property is split off (:func:`split_secret_properties`) and travels in
the driver's environment (:data:`~airflow_mysql_cdc.engine.runtime.spark_tasks.SECRET_CONF_VARIABLE`),
which the application sets on its Spark context's configuration when it creates it; the values are
also registered with the secrets masker and with the spark-submit hook, which refuses a command line
holding one, and Spark's redaction pattern covers them (:data:`REDACTION_REGEX`). The listener
itself (the ``openlineage-spark`` jar, ``spark.extraListeners``) is the user's to add in the
pipeline JSON's ``spark.conf``, as with the Spark provider.

Guarded by tests/unit/airflow/operators/test_spark_openlineage.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_mysql_cdc.engine.runtime.spark_tasks import SECRET_CONF_VARIABLE

_SECRET_PROPERTY = re.compile(r"^spark\.openlineage\.transport\.(?:transports\.[^.]+\.)?(?:auth|headers)\.")

REDACTION_CONF = "spark.redaction.regex"
REDACTION_REGEX = (
    r"(?i)secret|password|token|access[.]key|apikey|openlineage[.]transport[.](.*[.])?(auth|headers)[.]"
)
"""Spark's default redaction pattern plus the OpenLineage transport's secrets, set when they are
passed and ``spark_conf`` names no pattern of its own: Spark shows its configuration (the UI's
Environment tab, event logs) with the values of matching properties redacted, and ``apiKey`` does
not match its default."""


def injection_defaults() -> tuple[bool, bool]:
    """``[openlineage] spark_inject_parent_job_info`` and ``spark_inject_transport_info`` (unset: false)."""
    from airflow.sdk.configuration import conf

    return (
        conf.getboolean("openlineage", "spark_inject_parent_job_info", fallback=False),
        conf.getboolean("openlineage", "spark_inject_transport_info", fallback=False),
    )


@dataclass(frozen=True)
class SplitConf:
    """Spark properties split into those that may be spark-submit arguments and those that may not."""

    public: dict[str, Any]
    secret: dict[str, str]

    def environment(self) -> dict[str, str]:
        """The driver's environment variable that carries :attr:`secret` (none: ``{}``)."""
        return {SECRET_CONF_VARIABLE: json.dumps(self.secret, sort_keys=True)} if self.secret else {}


def split_secret_properties(properties: Mapping[str, Any]) -> SplitConf:
    """The OpenLineage transport's ``auth.*`` and ``headers.*`` properties apart from the rest."""
    secret = {key: str(value) for key, value in properties.items() if _SECRET_PROPERTY.match(key)}
    public = {key: value for key, value in properties.items() if key not in secret}
    if secret:
        public.setdefault(REDACTION_CONF, REDACTION_REGEX)
    return SplitConf(public, secret)


def inject_openlineage(
    properties: Mapping[str, Any], context: Any, *, parent_job: bool, transport: bool
) -> SplitConf:
    """``properties`` with the parent job's and the transport's OpenLineage properties added (each
    only if absent, as the provider decides), the secret ones split off."""
    conf = dict(properties)
    if parent_job or transport:
        from airflow.providers.common.compat.openlineage.utils.spark import (
            inject_parent_job_information_into_spark_properties,
            inject_transport_information_into_spark_properties,
        )

        if parent_job:
            conf = inject_parent_job_information_into_spark_properties(conf, context)
        if transport:
            conf = inject_transport_information_into_spark_properties(conf, context)
    return split_secret_properties(conf)
