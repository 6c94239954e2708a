"""How-to example (docs/how-to/verify.md): compare the lake with MySQL at the pipeline's position.

A weekly full comparison, with values masked in the task log and XCom (differing keys are named by a
hash); ``repair`` stays off so a difference fails the task for a person to look at first.
"""

from __future__ import annotations

import datetime
import os

from airflow.sdk import DAG

from airflow_mysql_cdc.operators.verify import MySqlCdcVerifyOperator

with DAG(
    "mysql_cdc_howto_verify",
    schedule="0 4 * * 0",
    start_date=datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
    catchup=False,
) as dag:
    verify = MySqlCdcVerifyOperator(
        task_id="verify_lake",
        pipeline_id="shop",
        mysql_cdc_conn_id=os.environ.get("SHOP_CDC_CONN", "shop_mysql"),
        tables=["shop.orders", "shop.payments"],
        lake_root=os.environ.get("SHOP_CDC_LAKE", "/data/lake/shop"),
        mode="full",
        max_examples=5,
        mask_values=True,
        repair=False,
    )
