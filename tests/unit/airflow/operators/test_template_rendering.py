"""Every templated field of every operator renders from a real task context (params from the run's
conf, the run's dates), and the rendered text is what the operator then uses."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from airflow.sdk import DAG, BaseOperator

from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from airflow_mysql_cdc.operators.maintenance import MySqlCdcLakeMaintenanceOperator
from airflow_mysql_cdc.operators.prerequisites import MySqlCdcPrerequisitesOperator
from airflow_mysql_cdc.operators.replicate import MySqlCdcReplicateOperator
from airflow_mysql_cdc.operators.snapshot import MySqlCdcSnapshotOperator
from airflow_mysql_cdc.operators.table_lists import rendered_table_names
from airflow_mysql_cdc.operators.verify import MySqlCdcVerifyOperator
from tests.support.airflow_context import runtime_task_instance

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
INTERVAL_END = datetime.datetime(2026, 11, 2, tzinfo=datetime.UTC)
CONF = {
    "conn": "shop_mysql",
    "spark": "spark_cluster",
    "tables": "shop.orders, shop.payments",
    "lake": "s3://lake/shop",
    "pipeline": "shop",
    "start": f"{UUID}:1-50",
    "target": f"{UUID}:1-90",
    "rebase": "true",
    "lake_conn": "lake_aws",
}
COMMON = {
    "mysql_cdc_conn_id": "{{ params.conn }}",
    "spark_conn_id": "{{ params.spark }}",
    "lake_conn_id": "{{ params.lake_conn }}",
}
OPERATORS: dict[str, tuple[type[BaseOperator], dict[str, Any], dict[str, Any]]] = {
    "prerequisites": (
        MySqlCdcPrerequisitesOperator,
        {
            "mysql_cdc_conn_id": "{{ params.conn }}",
            "tables": "{{ params.tables }}",
            "reader_server_ids": ["{{ 9000 + 1 }}"],
            "lake_root": "{{ params.lake }}",
            "lake_conn_id": "{{ params.lake_conn }}",
        },
        {
            "mysql_cdc_conn_id": "shop_mysql",
            "tables": "shop.orders, shop.payments",
            "reader_server_ids": ["9001"],
            "lake_root": "s3://lake/shop",
            "lake_conn_id": "lake_aws",
        },
    ),
    "snapshot": (
        MySqlCdcSnapshotOperator,
        {
            **COMMON,
            "tables": "{{ params.tables }}",
            "lake_root": "{{ params.lake }}/{{ ds }}",
            "restart": "{{ params.rebase }}",
        },
        {
            "mysql_cdc_conn_id": "shop_mysql",
            "spark_conn_id": "spark_cluster",
            "tables": "shop.orders, shop.payments",
            "lake_root": "s3://lake/shop/2026-11-01",
            "lake_conn_id": "lake_aws",
            "restart": "true",
        },
    ),
    "binlog_apply": (
        MySqlCdcBinlogApplyOperator,
        {
            **COMMON,
            "tables": "{{ params.tables }}",
            "lake_root": "{{ params.lake }}",
            "pipeline_id": "{{ params.pipeline }}",
            "start_gtids": "{{ params.start }}",
            "segment_end": "{{ data_interval_end }}",
            "target_gtids": "{{ params.target }}",
            "rebase": "{{ params.rebase }}",
        },
        {
            "mysql_cdc_conn_id": "shop_mysql",
            "spark_conn_id": "spark_cluster",
            "tables": "shop.orders, shop.payments",
            "lake_root": "s3://lake/shop",
            "lake_conn_id": "lake_aws",
            "pipeline_id": "shop",
            "start_gtids": f"{UUID}:1-50",
            "segment_end": "2026-11-02 00:00:00+00:00",
            "target_gtids": f"{UUID}:1-90",
            "rebase": "true",
        },
    ),
    "replicate": (
        MySqlCdcReplicateOperator,
        {
            **COMMON,
            "pipeline_id": "{{ params.pipeline }}",
            "tables": "{{ params.tables }}",
            "lake_root": "{{ params.lake }}",
        },
        {
            "mysql_cdc_conn_id": "shop_mysql",
            "spark_conn_id": "spark_cluster",
            "lake_conn_id": "lake_aws",
            "pipeline_id": "shop",
            "tables": "shop.orders, shop.payments",
            "lake_root": "s3://lake/shop",
        },
    ),
    "maintenance": (
        MySqlCdcLakeMaintenanceOperator,
        {
            "pipeline_id": "{{ params.pipeline }}",
            "tables": "{{ params.tables }}",
            "lake_root": "{{ params.lake }}",
            "lake_conn_id": "{{ params.lake_conn }}",
        },
        {
            "pipeline_id": "shop",
            "tables": "shop.orders, shop.payments",
            "lake_root": "s3://lake/shop",
            "lake_conn_id": "lake_aws",
        },
    ),
    "verify": (
        MySqlCdcVerifyOperator,
        {
            "mysql_cdc_conn_id": "{{ params.conn }}",
            "pipeline_id": "{{ params.pipeline }}",
            "tables": ["{{ params.pipeline }}.orders", "shop.payments"],
            "lake_root": "{{ params.lake }}",
            "lake_conn_id": "{{ params.lake_conn }}",
        },
        {
            "mysql_cdc_conn_id": "shop_mysql",
            "pipeline_id": "shop",
            "tables": ["shop.orders", "shop.payments"],
            "lake_root": "s3://lake/shop",
            "lake_conn_id": "lake_aws",
        },
    ),
}


def _rendered(operator_class: type[BaseOperator], arguments: dict[str, Any]) -> BaseOperator:
    with DAG(
        "templates",
        schedule="@daily",
        start_date=datetime.datetime(2026, 11, 1),
        params=dict.fromkeys(CONF, ""),
    ):
        operator = operator_class(task_id="task", **arguments)
    ti = runtime_task_instance(operator, conf=CONF, data_interval_end=INTERVAL_END)
    ti.render_templates()
    return ti.task


@pytest.mark.parametrize("name", OPERATORS)
def test_every_templated_field_renders_from_the_runs_params_and_dates(name: str) -> None:
    operator_class, arguments, expected = OPERATORS[name]
    assert set(expected) == set(operator_class.template_fields)  # the test covers every templated field
    task = _rendered(operator_class, arguments)
    assert {field: getattr(task, field) for field in operator_class.template_fields} == expected


def test_the_binlog_applys_rendered_fields_become_its_configuration() -> None:
    _, arguments, _ = OPERATORS["binlog_apply"]
    task = _rendered(MySqlCdcBinlogApplyOperator, arguments)
    assert isinstance(task, MySqlCdcBinlogApplyOperator)
    config = task.build_config({"data_interval_end": INTERVAL_END}, server_id=7001)
    assert config.tables == ("shop.orders", "shop.payments")
    assert (config.lake_root, config.pipeline_id, str(config.start_gtids)) == (
        "s3://lake/shop",
        "shop",
        f"{UUID}:1-50",
    )
    assert config.segment_end_us == int(INTERVAL_END.timestamp() * 1_000_000)
    assert config.rebase is True and config.server_id == 7001


def test_a_table_list_given_as_a_template_is_checked_when_rendered_and_a_plain_one_when_parsed() -> None:
    _, arguments, _ = OPERATORS["replicate"]
    task = _rendered(MySqlCdcReplicateOperator, arguments)
    assert rendered_table_names(task.tables) == ("shop.orders", "shop.payments")  # what execute uses
    with DAG("plain", schedule=None, start_date=datetime.datetime(2026, 11, 1)):
        plain = MySqlCdcReplicateOperator(
            task_id="replicate", pipeline_id="shop", tables="shop.orders,  shop.payments", lake_root="/lake"
        )
    assert plain.tables == ("shop.orders", "shop.payments")
    with pytest.raises(ValueError), DAG("wrong", schedule=None, start_date=datetime.datetime(2026, 11, 1)):
        MySqlCdcReplicateOperator(task_id="replicate", pipeline_id="shop", tables="orders", lake_root="/l")
