"""How-to example (docs/how-to/lake-maintenance.md): the lake's upkeep as its own daily DAG.

The pipeline DAG runs maintenance after each run when it is due; a separate DAG is for lakes kept
by a custom DAG, or to maintain at a quiet hour. It takes the pipeline's lease, so it never runs
next to an application writing the same pipeline.
"""

from __future__ import annotations

import datetime
import os

from airflow.sdk import DAG

from airflow_mysql_cdc.operators.maintenance import MySqlCdcLakeMaintenanceOperator

with DAG(
    "mysql_cdc_howto_lake_maintenance",
    schedule="0 3 * * *",
    start_date=datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
    catchup=False,
) as dag:
    maintain = MySqlCdcLakeMaintenanceOperator(
        task_id="maintain_lake",
        pipeline_id="shop",
        tables=["shop.orders", "shop.payments"],
        lake_root=os.environ.get("SHOP_CDC_LAKE", "/data/lake/shop"),
        maintenance={"interval_hours": 24, "target_file_mb": 16, "vacuum_retention_hours": 168},
        retries=2,  # exit code 3 (an application holds the lease) is retried
        retry_delay=datetime.timedelta(minutes=10),
    )
