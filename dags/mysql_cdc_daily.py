"""Example pipeline DAG: replicate MySQL tables into Delta tables, one data interval per run.

    check_prerequisites >> load_checkpoint >> resumability >> replicate >> maintain_lake >> verify_lake

(``verify_lake`` unless the configuration sets ``"verify": "off"``; the DAG is
:func:`airflow_mysql_cdc.pipeline.dag.build_pipeline_dag`; each task: docs/pipeline-dag.md).

Configure it without touching code: put a JSON file ``mysql_cdc_pipeline.json`` next to this file
(or name one in ``$AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG``), e.g.::

    {"dag_id": "shop_cdc", "pipeline_id": "shop", "mysql_cdc_conn_id": "shop_mysql",
     "tables": ["shop.customers", "shop.orders"], "lake_root": "s3://lake/shop",
     "storage_options": {"AWS_REGION": "eu-west-1"}, "lake_conn_id": "lake_aws",
     "schedule": "@daily", "start_date": "2026-11-01", "on_purged": "fail"}

Every key and its default: docs/configuration.md. Credentials live in Airflow connections: MySQL's
in ``mysql_cdc_conn_id``, the lake's in ``lake_conn_id`` (an ``aws`` connection; unset, the Spark
driver's own environment or instance role). ``storage_options`` holds public settings only.
"""

from __future__ import annotations

from pathlib import Path

from airflow_mysql_cdc.pipeline.config import load_pipeline_config
from airflow_mysql_cdc.pipeline.dag import build_pipeline_dag

dag = build_pipeline_dag(load_pipeline_config(Path(__file__).with_name("mysql_cdc_pipeline.json")))
