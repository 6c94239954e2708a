"""The hooks report the tables read and written to Airflow's hook lineage collector."""

from __future__ import annotations

import json

import pytest
from airflow.providers.common.compat.lineage import hook as compat_hook
from airflow.sdk.lineage import HookLineageCollector

from airflow_mysql_cdc.hooks.lake_storage import LakeStorageHook
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> HookLineageCollector:
    collector = HookLineageCollector()
    monkeypatch.setattr(compat_hook, "get_hook_lineage_collector", lambda: collector)
    return collector


def test_the_mysql_hook_reports_the_tables_read_as_mysql_assets(
    collector: HookLineageCollector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_SHOP",
        json.dumps({"conn_type": "mysql_cdc", "host": "db", "port": 3307, "password": "Hook-Secret-1"}),
    )
    hook = MySqlCdcHook("shop")
    hook.report_tables_read(hook.get_endpoint(), ["shop.orders"])

    (reported,) = collector.collected_assets.inputs
    assert reported.asset.uri == "mysql://db:3307/shop/orders"
    assert reported.context is hook


def test_the_lake_hook_reports_delta_tables_by_location(collector: HookLineageCollector) -> None:
    hook = LakeStorageHook()
    hook.report_tables_written(["/var/lake/shop/orders", "s3://lake/shop/orders"])

    assert [item.asset.uri for item in collector.collected_assets.outputs] == [
        "file:///var/lake/shop/orders",
        "s3://lake/shop/orders",
    ]


def test_a_failing_collector_costs_the_lineage_not_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> HookLineageCollector:
        raise RuntimeError("no collector")

    monkeypatch.setattr(compat_hook, "get_hook_lineage_collector", broken)
    LakeStorageHook().report_tables_read(["/var/lake/shop/orders"])
