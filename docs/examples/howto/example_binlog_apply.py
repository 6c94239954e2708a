"""How-to example (docs/how-to/binlog-apply.md): apply the binlog up to a GTID set the run is given.

``until_gtid_set`` stops exactly at ``target_gtids`` (for example a replica's position, or the
moment a migration finished), starting from ``start_gtids``; both are templated DAG params here.
"""

from __future__ import annotations

import datetime
import os

from airflow.sdk import DAG

from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator

with DAG(
    "mysql_cdc_howto_binlog_apply",
    schedule=None,
    start_date=datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
    params={"start": "", "target": ""},
) as dag:
    apply = MySqlCdcBinlogApplyOperator(
        task_id="apply",
        mysql_cdc_conn_id=os.environ.get("SHOP_CDC_CONN", "shop_mysql"),
        spark_conn_id=os.environ.get("SHOP_CDC_SPARK_CONN", "spark_default"),
        tables=["shop.orders", "shop.payments"],
        lake_root=os.environ.get("SHOP_CDC_LAKE", "/data/lake/shop"),
        pipeline_id="shop",
        start_gtids="{{ params.start }}",
        mode="until_gtid_set",
        target_gtids="{{ params.target }}",
        batch_max_rows=50_000,
        schema_changes="evolve",
        statement_changes="stop",
    )
