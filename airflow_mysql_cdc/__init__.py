"""airflow-mysql-cdc: replicate MySQL tables into Delta Lake by snapshot plus GTID binlog CDC.

The package has two rooms. ``airflow_mysql_cdc.engine`` is the CDC engine and never imports
Airflow, because it runs inside Spark executors where Airflow is not installed. Everything else is
the thin Airflow layer that calls it, shaped like a first-party provider: ``hooks`` (connections and
the server queries the sensors and trigger share), ``operators``, ``sensors``, ``triggers`` (which
import hooks, never sensors), and ``pipeline`` (the example DAG, the checkpoint chain, the segment
plan; its ``__init__`` is the map). ``get_provider_info`` lists them for Airflow.
"""

__version__ = "0.1.0"
