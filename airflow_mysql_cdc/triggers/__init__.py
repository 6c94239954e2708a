"""Triggers: the GTID conditions polled asynchronously in the triggerer; they import hooks, never sensors.

Guarded by ``tests/unit/airflow/triggers/`` (serialize round trip, events, no sensor import).
"""
