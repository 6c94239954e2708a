"""spark-submit entry point of the binlog application; see airflow_mysql_cdc.engine.entrypoints."""

from airflow_mysql_cdc.engine.entrypoints.binlog_to_delta import run_and_exit

if __name__ == "__main__":
    run_and_exit()
