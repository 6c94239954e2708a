"""The DAG's docs page describes this pipeline from its configuration, without a secret, and a wrong
configuration key's import error names the file to edit; the shipped DAG file's docstring and
pipeline-dag.md name its tasks."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from airflow_mysql_cdc.pipeline.config import PipelineConfig
from airflow_mysql_cdc.pipeline.dag import build_pipeline_dag
from airflow_mysql_cdc.pipeline.dag_docs import describe_pipeline

DAG_FILE = Path(__file__).resolve().parents[4] / "dags" / "mysql_cdc_daily.py"
PIPELINE_DAG_MD = Path(__file__).resolve().parents[4] / "docs" / "pipeline-dag.md"


def test_the_dags_docs_name_its_tables_lake_connections_schedule_and_policies() -> None:
    config = PipelineConfig(
        dag_id="shop_cdc", pipeline_id="shop", mysql_cdc_conn_id="shop_mysql", spark_conn_id="spark_yarn",
        tables=("shop.customers", "shop.orders"), lake_root="s3://lake-bucket/shop",
        storage_options={"AWS_REGION": "eu-west-1"}, lake_conn_id="lake_aws", schedule="@hourly",
        on_purged="resnapshot", schema_changes="stop", statement_changes="resnapshot", soft_deletes=True,
        maintenance={"interval_hours": 6}, verify="sample", verify_repair=True,
    )  # fmt: skip
    doc = build_pipeline_dag(config).doc_md
    assert doc == describe_pipeline(config)
    assert doc.startswith("# MySQL CDC pipeline `shop`")
    for shown in (
        "| `shop.customers` | `s3://lake-bucket/shop/shop/customers` |",
        "| `shop.orders` | `s3://lake-bucket/shop/shop/orders` |",
        "| lake | `s3://lake-bucket/shop` (the checkpoint chain: `s3://lake-bucket/shop/_cdc/checkpoints`) |",
        "| lake credentials | connection `lake_aws`; storage options: `AWS_REGION` |",
        "| MySQL connection | `shop_mysql` |",
        "| Spark connection | `spark_yarn` |",
        "| schedule | `@hourly` from 2026-11-01T00:00:00+00:00, catchup on |",
        "(`schema_changes`): stop: the run stops before DDL",
        "(`statement_changes`): resnapshot: a statement-logged change re-snapshots",
        "(`on_purged`): resnapshot: every table is snapshotted again",
        "(`soft_deletes`): on: a row deleted at the source stays in the lake, flagged `_cdc_deleted`",
        "(`maintenance`): every 6 h:",
        "(`verify`): sample: `verify_lake` compares 4 chunk(s) per table per run",
        "repairs the differing keys",
        ">> maintain_lake >> verify_lake`",
        "the pipeline DAG (`docs/pipeline-dag.md`)",
    ):
        assert shown in doc, shown
    assert "eu-west-1" not in doc  # option names only
    assert "def " not in doc and ":func:" not in doc and ":mod:" not in doc  # no Python docstring


def test_the_docs_link_to_where_the_docs_are_served_and_show_no_credentials_of_a_uri() -> None:
    config = PipelineConfig(
        lake_root="s3a://AKIAEXAMPLE:wJalr-secret@lake/shop", docs_url="https://git.example.com/cdc/docs/",
        maintenance={"enabled": False}, verify="off",
    )  # fmt: skip
    doc = describe_pipeline(config)
    assert "AKIAEXAMPLE" not in doc and "wJalr-secret" not in doc
    assert "`s3a://lake/shop`" in doc
    assert "[the pipeline DAG](https://git.example.com/cdc/docs/pipeline-dag.md)" in doc
    assert "(`maintenance`): off" in doc and "(`verify`): off: no `verify_lake` task" in doc
    assert "verify_lake`" not in doc.split("\n\n")[2]  # the task line ends at maintain_lake


def test_an_unknown_key_fails_the_dag_import_naming_the_json_file_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.dag_processing.dagbag import DagBag

    config = tmp_path / "shop_pipeline.json"
    config.write_text(json.dumps({"tabels": ["shop.orders"]}))
    monkeypatch.setenv("AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG", str(config))
    bag = DagBag(dag_folder=str(DAG_FILE), safe_mode=False)
    (error,) = bag.import_errors.values()
    assert f"the pipeline configuration {config}: unknown pipeline configuration keys: tabels" in error


def test_the_shipped_dags_docstring_and_pipeline_dag_md_name_every_task_in_order() -> None:
    """What a user reads first: the DAG file's docstring listed no ``maintain_lake`` and no
    ``verify_lake``, which every run of the default configuration runs (issue 34)."""
    tasks = [task.task_id for task in build_pipeline_dag(PipelineConfig(dag_id="docs")).topological_sort()]
    docstring = ast.get_docstring(ast.parse(DAG_FILE.read_text())) or ""
    page = PIPELINE_DAG_MD.read_text()
    for text in (docstring, page):
        (chain,) = [line.split(" >> ") for line in text.splitlines() if " >> " in line]
        assert [name.strip() for name in chain] == tasks
    table = re.findall(r"^\| `(\w+)` \|", page.partition("| task | what it does |")[2], re.MULTILINE)
    assert table[: len(tasks)] == tasks
