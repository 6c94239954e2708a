"""Sensors: wait until the server has executed a GTID set, or until a checkpoint can resume on it.

Both live in ``gtid_sensors``; they are deferrable (the trigger of :mod:`airflow_mysql_cdc.triggers`)
and ask their question through :mod:`airflow_mysql_cdc.hooks.gtid_conditions`. Guarded by
``tests/unit/airflow/sensors/`` (timeout messages) and ``tests/integration/test_gtid_sensors_in_a_dag.py``.
"""
