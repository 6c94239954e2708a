"""The "Run record" link opens the task instance's XCom tab, where the run's record is."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from airflow_mysql_cdc.operators.replicate import MySqlCdcReplicateOperator
from airflow_mysql_cdc.operators.run_record_link import MySqlCdcRunRecordLink, run_record_url


def test_the_link_is_the_task_instances_xcom_tab_with_the_run_id_quoted() -> None:
    url = run_record_url(
        "http://airflow.example.com/", "shop", "scheduled__2026-01-01T00:00:00+00:00", "replicate", -1
    )
    assert url == (
        "http://airflow.example.com/dags/shop/runs/scheduled__2026-01-01T00%3A00%3A00%2B00%3A00"
        "/tasks/replicate/xcom"
    )


def test_a_mapped_task_instance_links_to_its_own_xcom_tab() -> None:
    assert (
        run_record_url("/", "shop", "manual_1", "replicate", 3)
        == "/dags/shop/runs/manual_1/tasks/replicate/mapped/3/xcom"
    )


def test_the_link_follows_the_configured_api_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.internal/prefix/")
    key = SimpleNamespace(dag_id="shop", run_id="manual_1", task_id="replicate", map_index=-1)
    link = MySqlCdcRunRecordLink().get_link(None, ti_key=key)  # type: ignore[arg-type]
    assert link == "https://airflow.internal/prefix/dags/shop/runs/manual_1/tasks/replicate/xcom"


def test_the_replicate_operator_carries_the_link() -> None:
    assert "Run record" in [link.name for link in MySqlCdcReplicateOperator.operator_extra_links]


def test_the_api_server_finds_the_link_in_the_serialized_dag_without_importing_it() -> None:
    """The api-server reads links from the serialized DAG: a name and the XCom key the worker pushed."""
    import datetime

    from airflow.sdk import DAG
    from airflow.serialization.serialized_objects import DagSerialization

    with DAG("shop", schedule=None, start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)) as dag:
        MySqlCdcReplicateOperator(task_id="replicate", pipeline_id="shop", tables=["db.t"], lake_root="/lake")
    served = DagSerialization.from_dict(DagSerialization.to_dict(dag)).get_task("replicate")
    links = {link.name: link.xcom_key for link in served.operator_extra_links}
    assert links["Run record"] == "_link_MySqlCdcRunRecordLink"
