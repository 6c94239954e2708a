"""spark-submit entry point of the snapshot application; see airflow_mysql_cdc.engine.entrypoints."""

from airflow_mysql_cdc.engine.entrypoints.common import exit_hard
from airflow_mysql_cdc.engine.entrypoints.snapshot_to_delta import main

if __name__ == "__main__":
    exit_hard(main)
