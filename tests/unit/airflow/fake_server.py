"""A fake server's GTID state behind MySqlCdcHook, for the pure logic of the sensors and trigger.

Only the two reads the GTID conditions make are replaced; the verdicts come from the engine's real
functions. The DAG-level tests (tests/integration/test_gtid_sensors_in_a_dag.py) use real servers.
"""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.resumability import ResumabilityAssessment, assess_resumability
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook


def serve_gtid_state(monkeypatch: pytest.MonkeyPatch, *, executed: str, purged: str = "") -> None:
    def gtid_executed(hook: MySqlCdcHook) -> GtidSet:
        return GtidSet.parse(executed)

    def resumability(hook: MySqlCdcHook, checkpoint: GtidSet) -> ResumabilityAssessment:
        return assess_resumability(checkpoint, GtidSet.parse(purged), GtidSet.parse(executed))

    monkeypatch.setattr(MySqlCdcHook, "get_gtid_executed", gtid_executed)
    monkeypatch.setattr(MySqlCdcHook, "assess_resumability", resumability)
