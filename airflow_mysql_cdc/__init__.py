"""airflow-mysql-cdc: replicate MySQL tables into Delta Lake by snapshot plus GTID binlog CDC.

The package has two rooms. ``airflow_mysql_cdc.engine`` is the CDC engine and never imports
Airflow, because it runs inside Spark executors where Airflow is not installed. Everything else
(hooks, operators, sensors) is the thin Airflow layer that calls it.
"""

__version__ = "0.1.0"
