"""Extra links on the pipeline's tasks: the lake location of the task's tables, and Spark's web UI.

Airflow 3 computes a task's extra links on the worker when the task finishes (the Task SDK calls
``get_link`` with the rendered operator and pushes the URL as the XCom ``_link_<class name>``); the
API server shows that XCom and imports nothing of the provider. So a link may use only what the
rendered operator holds, and it must never carry a secret (an XCom is readable by every user who
may see the run):

- :class:`MySqlCdcLakeLocationLink`: where the task's lake is, as a browser can open it: the S3
  console for ``s3://`` (unless ``storage_options`` names another endpoint, such as MinIO: then the
  lake's URI), the Cloud Storage console for ``gs://``, the storage account's URL for ``abfss://``,
  ``file://`` for a local path. Credentials in a URI are dropped.
- :class:`MySqlCdcSparkUiLink`: Spark's web UI of the task's application, only when the pipeline
  turned the UI on (``"spark.ui.enabled": "true"`` in its ``spark.conf``; it is off by default,
  :func:`~airflow_mysql_cdc.hooks.spark_defaults.driver_conf`). The driver runs on the
  worker (client mode only), so the URL is ``spark.ui.reverseProxyUrl`` when set, else
  ``http://<spark.driver.host or the worker's name>:<spark.ui.port>``. Without ``spark.ui.port``
  the operator sets one that is free on the worker when the application starts
  (:func:`with_free_ui_port`): Spark's default, 4040, moves on to the next port when taken (a
  second application on the worker), and the link would name the other application's UI. The
  operator pushes the link when the application starts (:func:`publish_spark_ui_link`), so it can
  be opened while the application runs; the UI ends with the application.

Registered in the provider info's ``extra-links``; guarded by
tests/unit/airflow/operators/test_links.py and the daily DAG test (the links a real run pushed).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from airflow.sdk import BaseOperatorLink

from airflow_mysql_cdc.hooks.spark_defaults import driver_conf

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

_TRUE = ("true", "1", "yes", "on")
_CUSTOM_ENDPOINT_OPTIONS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT", "endpoint_url", "aws_endpoint")


def lake_location_url(lake_root: str, storage_options: Mapping[str, str] | None = None) -> str:
    """A URL a browser can open for ``lake_root`` (see the module doc); "" for no lake."""
    text = (lake_root or "").strip().rstrip("/")
    if not text:
        return ""
    if "://" not in text:
        return "file://" + quote(text if text.startswith("/") else "/" + text)
    parts = urlsplit(text)
    scheme, bucket, prefix = parts.scheme.lower(), parts.hostname or "", parts.path.strip("/")
    options = {key.lower() for key in (storage_options or {})}
    if scheme in ("s3", "s3a") and not options & {name.lower() for name in _CUSTOM_ENDPOINT_OPTIONS}:
        return f"https://s3.console.aws.amazon.com/s3/buckets/{bucket}?prefix={quote(prefix + '/')}"
    if scheme == "gs":
        return f"https://console.cloud.google.com/storage/browser/{bucket}/{quote(prefix)}".rstrip("/")
    if scheme in ("abfs", "abfss") and parts.username:
        # abfss://<container>@<account>.dfs.core.windows.net/<path>
        return f"https://{bucket}/{parts.username}/{quote(prefix)}".rstrip("/")
    # Any other URI as it is, less a user:password part (never shown, even if someone wrote one).
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return f"{parts.scheme}://{netloc}{parts.path}"


def spark_ui_url(spark_conf: Mapping[str, Any]) -> str:
    """Spark's web UI of an application run with ``spark_conf`` (the driver's, on this worker); ""
    when the UI is off."""
    if str(spark_conf.get("spark.ui.enabled", "true")).strip().lower() not in _TRUE:
        return ""
    proxy = str(spark_conf.get("spark.ui.reverseProxyUrl") or "").strip()
    if proxy:
        return proxy
    host = str(spark_conf.get("spark.driver.host") or "").strip() or socket.getfqdn()
    port = str(spark_conf.get("spark.ui.port") or "4040").strip()
    return f"http://{host}:{port}"


def with_free_ui_port(spark_conf: dict[str, Any] | None) -> dict[str, Any] | None:
    """``spark_conf`` with ``spark.ui.port`` set to a port free on this worker now, when the UI is on
    and neither a port nor a reverse proxy is set (then the link names the port Spark binds, not
    4040, which another application may hold); else ``spark_conf`` as it is."""
    conf = spark_conf or {}
    ui_on = str(conf.get("spark.ui.enabled", "false")).strip().lower() in _TRUE
    if not ui_on or conf.get("spark.ui.port") or conf.get("spark.ui.reverseProxyUrl"):
        return spark_conf
    with socket.socket() as probe:  # the port is free now; Spark binds it a few seconds later
        probe.bind(("", 0))
        port = probe.getsockname()[1]
    return {**conf, "spark.ui.port": str(port)}


class MySqlCdcLakeLocationLink(BaseOperatorLink):
    """Opens the lake that holds the task's tables (its ``lake_root``)."""

    name = "Lake location"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        return lake_location_url(
            str(getattr(operator, "lake_root", "") or ""), getattr(operator, "storage_options", None)
        )


class MySqlCdcSparkUiLink(BaseOperatorLink):
    """Opens Spark's web UI of the task's application, when the pipeline turned the UI on."""

    name = "Spark UI"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        return spark_ui_url(driver_conf(getattr(operator, "spark_conf", None)))


def publish_spark_ui_link(operator: BaseOperator) -> None:
    """Push the Spark UI link now, while the application runs (Airflow pushes links only at the end)."""
    link = MySqlCdcSparkUiLink()
    url = link.get_link(operator, ti_key=None)  # type: ignore[arg-type]  # the URL needs no task instance
    if not url:
        return
    from airflow.sdk import get_current_context

    get_current_context()["ti"].xcom_push(key=link.xcom_key, value=url)
    operator.log.info("Spark UI (while the application runs): %s", url)
