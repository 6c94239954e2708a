"""OpenLineage facets of the operators, called as the provider's listener calls them (as first-party
providers test theirs): the datasets, their schema and output statistics, and no secret."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pyarrow as pa
import pytest
from airflow.providers.common.compat.openlineage.facet import (
    Dataset,
    OutputStatisticsOutputDatasetFacet,
    SchemaDatasetFacet,
    SchemaDatasetFacetFields,
)
from deltalake import write_deltalake

from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from airflow_mysql_cdc.operators.lineage import (
    DatasetName,
    lineage_of_record,
    location_dataset,
    mysql_dataset,
)
from airflow_mysql_cdc.operators.maintenance import MySqlCdcLakeMaintenanceOperator
from airflow_mysql_cdc.operators.replicate import MySqlCdcReplicateOperator
from airflow_mysql_cdc.operators.snapshot import MySqlCdcSnapshotOperator
from airflow_mysql_cdc.operators.verify import MySqlCdcVerifyOperator
from airflow_mysql_cdc.runs import lake as lake_module
from tests.support.openlineage import clear_openlineage_caches, openlineage_on

PASSWORD = "Lineage-Secret-91"


@pytest.fixture(autouse=True)
def source_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_CDC_SOURCE",
        json.dumps(
            {
                "conn_type": "mysql_cdc",
                "host": "db.example",
                "port": 3307,
                "login": "cdc",
                "password": PASSWORD,
            }
        ),
    )


@pytest.fixture(autouse=True)
def openlineage(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """OpenLineage on, as in a deployment with a transport (the operators read schemas only then)."""
    with openlineage_on(monkeypatch, {"type": "console"}):
        yield


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """A lake whose shop.orders target table exists (id bigint, note string); no changelog yet."""
    write_deltalake(
        str(tmp_path / "shop" / "orders"), pa.table({"id": pa.array([1], pa.int64()), "note": ["a"]})
    )
    return tmp_path


def test_dataset_names_follow_the_openlineage_naming_spec() -> None:
    assert mysql_dataset("db", 3306, "shop.orders") == DatasetName("mysql://db:3306", "shop.orders")
    assert location_dataset("s3://lake/prefix/shop/orders") == DatasetName("s3://lake", "prefix/shop/orders")
    assert location_dataset("gs://lake/shop/orders/") == DatasetName("gs://lake", "shop/orders")
    assert location_dataset("abfss://data@account.dfs.core.windows.net/lake/shop/orders") == DatasetName(
        "abfss://data@account.dfs.core.windows.net", "lake/shop/orders"
    )
    assert location_dataset("/var/lake/shop/orders") == DatasetName("file", "/var/lake/shop/orders")
    assert location_dataset("file:///var/lake/shop/orders") == DatasetName("file", "/var/lake/shop/orders")


def _apply_operator(lake: Path) -> MySqlCdcBinlogApplyOperator:
    return MySqlCdcBinlogApplyOperator(
        task_id="apply",
        tables="shop.orders",
        lake_root=str(lake),
        pipeline_id="shop",
        mysql_cdc_conn_id="cdc_source",
    )


def test_apply_reports_the_mysql_table_read_and_its_delta_tables_written_with_schema_and_rows(
    lake: Path,
) -> None:
    operator = _apply_operator(lake)
    operator.lineage = operator.planned_lineage().done({"shop.orders": 7})

    lineage = operator.get_openlineage_facets_on_complete(None)

    assert lineage.inputs == [Dataset(namespace="mysql://db.example:3307", name="shop.orders")]
    target, changelog = lineage.outputs
    assert (target.namespace, target.name) == ("file", f"{lake}/shop/orders")
    assert (changelog.namespace, changelog.name) == ("file", f"{lake}/_changelog/shop/orders")
    assert target.facets["schema"] == SchemaDatasetFacet(
        fields=[
            SchemaDatasetFacetFields(name="id", type="long"),
            SchemaDatasetFacetFields(name="note", type="string"),
        ]
    )
    assert "schema" not in changelog.facets  # not created yet: no schema to name
    for output in (target, changelog):
        assert output.outputFacets["outputStatistics"] == OutputStatisticsOutputDatasetFacet(rowCount=7)


def test_the_start_event_names_the_same_datasets_without_statistics(lake: Path) -> None:
    lineage = _apply_operator(lake).get_openlineage_facets_on_start()

    assert [dataset.name for dataset in lineage.inputs] == ["shop.orders"]
    assert [dataset.name for dataset in lineage.outputs] == [
        f"{lake}/shop/orders",
        f"{lake}/_changelog/shop/orders",
    ]
    assert all(not output.outputFacets for output in lineage.outputs)


def test_the_replicate_task_counts_the_rows_its_published_record_names(lake: Path) -> None:
    operator = MySqlCdcReplicateOperator(
        task_id="replicate",
        pipeline_id="shop",
        tables=["shop.orders"],
        lake_root=str(lake),
        mysql_cdc_conn_id="cdc_source",
    )
    record = {"tables": {"shop.orders": {"snapshot_id": "", "rows_applied": 12}}}
    operator.lineage = lineage_of_record(operator.planned_lineage(), record)

    lineage = operator.get_openlineage_facets_on_complete(None)

    assert [output.outputFacets["outputStatistics"].rowCount for output in lineage.outputs] == [12, 12]


def test_a_run_that_applied_nothing_reports_its_datasets_without_statistics(lake: Path) -> None:
    """A run whose interval a later record covers returns that record: its rows are not this run's."""
    operator = MySqlCdcReplicateOperator(
        task_id="replicate",
        pipeline_id="shop",
        tables=["shop.orders"],
        lake_root=str(lake),
        mysql_cdc_conn_id="cdc_source",
    )
    lineage = operator.get_openlineage_facets_on_complete(None)

    assert len(lineage.outputs) == 2
    assert all(not output.outputFacets for output in lineage.outputs)


def test_the_snapshot_writes_target_tables_only(lake: Path) -> None:
    operator = MySqlCdcSnapshotOperator(
        task_id="snapshot", tables="shop.orders", lake_root=str(lake), mysql_cdc_conn_id="cdc_source"
    )
    operator.lineage = operator.planned_lineage().done({"shop.orders": 1000})

    lineage = operator.get_openlineage_facets_on_complete(None)

    assert [dataset.namespace for dataset in lineage.inputs] == ["mysql://db.example:3307"]
    assert [
        (output.name, output.outputFacets["outputStatistics"].rowCount) for output in lineage.outputs
    ] == [(f"{lake}/shop/orders", 1000)]


def test_maintenance_reads_and_rewrites_the_lake_tables_and_no_mysql_table(lake: Path) -> None:
    operator = MySqlCdcLakeMaintenanceOperator(
        task_id="maintain", pipeline_id="shop", tables=["shop.orders"], lake_root=str(lake)
    )
    operator.lineage = operator.planned_lineage().done(None)
    lineage = operator.get_openlineage_facets_on_complete(None)

    names = [f"{lake}/shop/orders", f"{lake}/_changelog/shop/orders"]
    assert [dataset.name for dataset in lineage.inputs] == names
    assert [dataset.name for dataset in lineage.outputs] == names
    assert lineage.inputs[0].facets["schema"].fields[0].name == "id"


@pytest.mark.parametrize(("repair", "outputs"), [(False, []), (True, ["/shop/orders"])])
def test_verify_reads_both_sides_and_writes_only_when_it_repairs(
    lake: Path, repair: bool, outputs: list[str]
) -> None:
    operator = MySqlCdcVerifyOperator(
        task_id="verify",
        pipeline_id="shop",
        tables=["shop.orders"],
        lake_root=str(lake),
        repair=repair,
        mysql_cdc_conn_id="cdc_source",
    )
    lineage = operator.get_openlineage_facets_on_complete(None)

    assert [dataset.name for dataset in lineage.inputs] == [
        "shop.orders",
        f"{lake}/shop/orders",
        f"{lake}/_changelog/shop/orders",
    ]
    assert [dataset.name for dataset in lineage.outputs] == [f"{lake}{path}" for path in outputs]


def test_no_secret_reaches_a_lineage_event(lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_LAKE",
        json.dumps({"conn_type": "aws", "login": "AKIALINEAGE", "password": "Lake-Secret-Key-44"}),
    )
    operator = MySqlCdcBinlogApplyOperator(
        task_id="apply",
        tables="shop.orders",
        lake_root=str(lake),
        pipeline_id="shop",
        mysql_cdc_conn_id="cdc_source",
        lake_conn_id="lake",
    )
    operator.lineage = operator.planned_lineage().done({"shop.orders": 3})
    lineage = operator.get_openlineage_facets_on_complete(None)

    text = json.dumps(attrs.asdict(lineage), default=str)
    for secret in (PASSWORD, "Lake-Secret-Key-44", "AKIALINEAGE"):
        assert secret not in text


def test_the_package_works_without_the_openlineage_provider(lake: Path) -> None:
    """Nothing imports the provider until its listener calls a facet method.

    The OpenLineage client and the provider's modules are refused; only the provider's metadata
    module stays, which Airflow's provider discovery reads for every installed provider."""
    program = f"""
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.startswith(("airflow.providers.openlineage.", "openlineage")) and not name.endswith(
            ".get_provider_info"
        ):
            raise ImportError(f"no {{name}} here")
sys.meta_path.insert(0, Refuse())
from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from airflow_mysql_cdc.operators.spark_application import SparkApplicationOperator
operator = MySqlCdcBinlogApplyOperator(
    task_id="apply", tables="shop.orders", lake_root={str(lake)!r}, pipeline_id="shop",
    mysql_cdc_conn_id="cdc_source", openlineage_inject_parent_job_info=True,
)
assert operator.planned_lineage().mysql_tables == ("shop.orders",)
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=Path(__file__).parents[4]
    )
    assert done.stdout.strip().endswith("ok"), done.stderr[-2000:]


def test_schemas_are_read_in_the_task_and_only_while_openlineage_is_on(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listener builds events in a forked process, where delta-rs cannot run: the facet methods
    read nothing, and with OpenLineage off the task reads no schema either."""
    operator = _apply_operator(lake)
    planned = operator.planned_lineage()
    assert planned.done(None).columns == {f"{lake}/shop/orders": [("id", "long"), ("note", "string")]}
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__DISABLED", "True")
    clear_openlineage_caches()
    assert planned.done(None).columns == {}

    def no_lake_reads(*_: object) -> None:
        raise AssertionError("the facet method read the lake")

    monkeypatch.setattr(lake_module, "table_columns", no_lake_reads)
    operator.get_openlineage_facets_on_start()
    operator.lineage = planned.done({"shop.orders": 1})
    operator.get_openlineage_facets_on_complete(None)
