"""The extra links: the lake location of a task's tables and Spark's web UI, rendered for a real
task instance (the task SDK's, with the run's params), and never holding a credential."""

from __future__ import annotations

import datetime
import socket
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_mysql_cdc.operators import links
from airflow_mysql_cdc.operators.links import (
    MySqlCdcLakeLocationLink,
    MySqlCdcSparkUiLink,
    lake_location_url,
    publish_spark_ui_link,
    spark_ui_url,
)
from airflow_mysql_cdc.operators.maintenance import MySqlCdcLakeMaintenanceOperator
from airflow_mysql_cdc.operators.replicate import MySqlCdcReplicateOperator
from tests.support.airflow_context import runtime_task_instance


@pytest.mark.parametrize(
    ("lake_root", "options", "url"),
    [
        ("/data/lake/shop/", {}, "file:///data/lake/shop"),
        ("file:///data/lake", {}, "file:///data/lake"),
        (
            "s3://lake-bucket/cdc/shop",
            {"AWS_REGION": "eu-west-1"},
            "https://s3.console.aws.amazon.com/s3/buckets/lake-bucket?prefix=cdc/shop/",
        ),
        ("s3://lake/shop", {"AWS_ENDPOINT_URL": "http://minio:9000"}, "s3://lake/shop"),
        ("gs://lake-bucket/shop", {}, "https://console.cloud.google.com/storage/browser/lake-bucket/shop"),
        (
            "abfss://lake@account1.dfs.core.windows.net/shop",
            {},
            "https://account1.dfs.core.windows.net/lake/shop",
        ),
        ("s3a://AKIAKEY:secret-key@lake/shop", {"endpoint_url": "http://x"}, "s3a://lake/shop"),
        ("", {}, ""),
    ],
)
def test_the_lake_location_is_a_url_a_browser_opens_without_credentials(
    lake_root: str, options: dict, url: str
) -> None:
    assert lake_location_url(lake_root, options) == url


def test_the_spark_ui_link_is_empty_while_the_ui_is_off_and_names_the_driver_when_on() -> None:
    assert spark_ui_url({"spark.ui.enabled": "false"}) == ""
    assert spark_ui_url({"spark.ui.enabled": "true"}) == f"http://{socket.getfqdn()}:4040"
    on = {"spark.ui.enabled": "true", "spark.driver.host": "worker-3.internal", "spark.ui.port": "4050"}
    assert spark_ui_url(on) == "http://worker-3.internal:4050"
    proxied = {**on, "spark.ui.reverseProxyUrl": "https://spark.example.com/worker-3"}
    assert spark_ui_url(proxied) == "https://spark.example.com/worker-3"


def test_an_application_with_the_ui_on_and_no_port_gets_a_port_free_on_the_worker() -> None:
    assert links.with_free_ui_port(None) is None  # UI off (the default): nothing to choose
    chosen = links.with_free_ui_port({"spark.ui.enabled": "true"})
    assert chosen is not None
    port = int(chosen["spark.ui.port"])
    with socket.socket() as probe:
        probe.bind(("", port))  # free: Spark binds it, and the link names it
    assert spark_ui_url(chosen) == f"http://{socket.getfqdn()}:{port}"
    stated = {"spark.ui.enabled": "true", "spark.ui.port": "4091"}
    proxied = {"spark.ui.enabled": "true", "spark.ui.reverseProxyUrl": "https://spark.example.com/w3"}
    assert links.with_free_ui_port(stated) is stated and links.with_free_ui_port(proxied) is proxied


def _rendered(operator_class: type, **arguments: Any):
    with DAG("links", schedule="@daily", start_date=datetime.datetime(2026, 11, 1), params={"lake": ""}):
        operator = operator_class(task_id="task", pipeline_id="shop", tables=["shop.orders"], **arguments)
    ti = runtime_task_instance(operator, conf={"lake": "s3://lake-bucket/shop"})
    ti.render_templates()
    return ti


def test_the_links_render_for_a_task_instance_from_its_rendered_fields() -> None:
    ti = _rendered(MySqlCdcReplicateOperator, lake_root="{{ params.lake }}")
    shown = {
        link.name: link.get_link(ti.task, ti_key=ti)
        for link in ti.task.operator_extra_links
        if link.name in ("Lake location", "Spark UI")
    }
    assert shown == {
        "Lake location": "https://s3.console.aws.amazon.com/s3/buckets/lake-bucket?prefix=shop/",
        "Spark UI": "",  # the pipeline did not turn the UI on (off by default)
    }
    with_ui = _rendered(
        MySqlCdcReplicateOperator,
        lake_root="{{ params.lake }}",
        spark_conf={"spark.ui.enabled": "true", "spark.driver.host": "w1", "spark.ui.port": "4090"},
    )
    assert MySqlCdcSparkUiLink().get_link(with_ui.task, ti_key=with_ui) == "http://w1:4090"
    maintenance = _rendered(MySqlCdcLakeMaintenanceOperator, lake_root="{{ params.lake }}")
    assert [link.name for link in maintenance.task.operator_extra_links] == ["Lake location"]
    assert (
        MySqlCdcLakeLocationLink()
        .get_link(maintenance.task, ti_key=maintenance)
        .endswith("lake-bucket?prefix=shop/")
    )


class _Ti:
    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def test_the_spark_ui_link_is_pushed_when_the_application_starts_so_it_opens_while_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ti = _Ti()
    monkeypatch.setattr("airflow.sdk.get_current_context", lambda: {"ti": ti})
    quiet = _rendered(MySqlCdcReplicateOperator, lake_root="/lake").task
    publish_spark_ui_link(quiet)
    assert ti.pushed == {}  # UI off: nothing to open
    with_ui = _rendered(
        MySqlCdcReplicateOperator,
        lake_root="/lake",
        spark_conf={"spark.ui.enabled": "true", "spark.ui.port": "4091"},
    ).task
    publish_spark_ui_link(with_ui)
    assert ti.pushed == {"_link_MySqlCdcSparkUiLink": f"http://{socket.getfqdn()}:4091"}
    assert links.MySqlCdcSparkUiLink().xcom_key == "_link_MySqlCdcSparkUiLink"
