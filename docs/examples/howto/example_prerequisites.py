"""How-to example (docs/how-to/prerequisites.md): check a source server before a pipeline starts.

Run it by hand (or on a schedule) after creating the connection: it fails naming every setting,
grant and table that is not ready, each with the statement that fixes it.
"""

from __future__ import annotations

import datetime
import os

from airflow.sdk import DAG

from airflow_mysql_cdc.operators.prerequisites import MySqlCdcPrerequisitesOperator

CONN = os.environ.get("SHOP_CDC_CONN", "shop_mysql")

with DAG(
    "mysql_cdc_howto_prerequisites",
    schedule=None,
    start_date=datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
    params={"tables": "shop.orders,shop.payments"},
) as dag:
    check = MySqlCdcPrerequisitesOperator(
        task_id="check_prerequisites",
        mysql_cdc_conn_id=CONN,
        tables="{{ params.tables }}",  # templated: a list or a comma-separated string
        min_binlog_retention=datetime.timedelta(days=2),
        lake_root=os.environ.get("SHOP_CDC_LAKE", "/data/lake/shop"),
    )
