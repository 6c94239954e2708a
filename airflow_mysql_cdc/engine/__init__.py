"""The CDC engine: GTID algebra, binlog reading, snapshot windows, type mapping and sinks.

This subpackage must never import Airflow: it is shipped to Spark drivers and executors where
Airflow is not installed. ``tests/test_engine_isolation.py`` enforces that.
"""
