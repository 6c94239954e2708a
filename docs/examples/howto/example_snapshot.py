"""How-to example (docs/how-to/snapshot.md): snapshot tables into the lake, then stream from there.

The snapshot's ``stream_start`` (XCom) is the GTID set the binlog application starts from: every
change after each chunk's low watermark, filtered per chunk, so nothing is lost or applied twice.
"""

from __future__ import annotations

import datetime
import os

from airflow.sdk import DAG

from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from airflow_mysql_cdc.operators.snapshot import MySqlCdcSnapshotOperator

CONN = os.environ.get("SHOP_CDC_CONN", "shop_mysql")
LAKE = os.environ.get("SHOP_CDC_LAKE", "/data/lake/shop")
TABLES = ["shop.orders", "shop.payments"]

with DAG(
    "mysql_cdc_howto_snapshot",
    schedule=None,
    start_date=datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
    params={"restart": False},
) as dag:
    snapshot = MySqlCdcSnapshotOperator(
        task_id="snapshot",
        mysql_cdc_conn_id=CONN,
        spark_conn_id=os.environ.get("SHOP_CDC_SPARK_CONN", "spark_default"),
        tables=TABLES,
        lake_root=LAKE,
        chunk_size=50_000,
        restart="{{ params.restart }}",  # templated: "true" takes a new snapshot over a finished one
    )
    catch_up = MySqlCdcBinlogApplyOperator(
        task_id="catch_up",
        mysql_cdc_conn_id=CONN,
        tables=TABLES,
        lake_root=LAKE,
        pipeline_id="shop",
        start_gtids="{{ ti.xcom_pull(task_ids='snapshot')['stream_start'] }}",
        mode="until_caught_up",
    )
    snapshot >> catch_up
