"""Triggers: the GTID conditions polled asynchronously in the triggerer; they import hooks, never sensors.

- ``gtid_state``: the one trigger, polling a GTID condition of :mod:`airflow_mysql_cdc.hooks.gtid_conditions`.

Guarded by ``tests/unit/airflow/triggers/`` (serialize round trip, events, no sensor import).
"""
