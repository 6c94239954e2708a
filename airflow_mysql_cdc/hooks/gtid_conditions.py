"""The conditions the GTID sensors and their trigger wait for, shared so all modes judge alike.

A condition read returns one of three states: ``met`` (done, with a payload for XCom),
``waiting`` (poke again: a replica may still catch up) or ``failed`` (waiting cannot help).
Poke, reschedule and deferrable mode all call :func:`evaluate_condition`, so they can never
disagree on what a server state means.

It lives beside :class:`~airflow_mysql_cdc.hooks.mysql_cdc.MySqlCdcHook` because it is a query of
the server: the sensors and the trigger both depend on it, and the trigger depends on nothing in
``sensors/`` (as the first-party providers' triggers depend only on their hooks). Guarded by
tests/unit/airflow/triggers/test_gtid_state.py and tests/integration/test_gtid_sensors_in_a_dag.py.

:func:`assess_headroom` is the other query the resumability sensor makes once a checkpoint is
resumable: how long the server keeps the binlog that checkpoint needs
(:mod:`airflow_mysql_cdc.engine.values.headroom`). A server that will not say (an account without
REPLICATION CLIENT/SLAVE, a file purged while it was read) gives an *unknown* headroom, never a
failed run: the headroom warns, the resumability verdict decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pymysql

from airflow_mysql_cdc.engine.mysql.binlog_files import read_headroom
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.headroom import (
    HeadroomAssessment,
    HeadroomPolicy,
    judge_headroom,
    unknown_headroom,
)
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.engine.values.resumability import Verdict
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.hooks.next_steps import with_next_step

ConditionKind = Literal["resumable", "reached"]
OnPurged = Literal["fail", "resnapshot"]
ConditionState = Literal["met", "waiting", "failed"]


@dataclass(frozen=True)
class ConditionOutcome:
    state: ConditionState
    message: str
    payload: JsonObject = field(default_factory=dict)

    def to_event(self) -> JsonObject:
        return {"state": self.state, "message": self.message, "payload": self.payload}


def evaluate_condition(
    conn_id: str, kind: ConditionKind, gtid_set: str, on_purged: OnPurged = "fail"
) -> ConditionOutcome:
    hook = MySqlCdcHook(conn_id)
    target = GtidSet.parse(gtid_set)
    if kind == "resumable":
        assessment = hook.assess_resumability(target)
        payload = assessment.to_dict()
        if assessment.verdict is Verdict.RESUMABLE:
            return ConditionOutcome("met", assessment.message, payload)
        if assessment.verdict is Verdict.BINLOG_PURGED:
            if on_purged == "resnapshot":
                return ConditionOutcome("met", "re-snapshot needed: " + assessment.message, payload)
            return ConditionOutcome(
                "failed", with_next_step(assessment.message, assessment.next_step), payload
            )
        return ConditionOutcome("waiting", assessment.message, payload)
    executed = hook.get_gtid_executed()
    missing = target - executed
    payload = {"target": str(target), "gtid_executed": str(executed), "missing": str(missing)}
    if missing.is_empty():
        return ConditionOutcome(
            "met", f"the server has executed every GTID of {target or '(empty)'}", payload
        )
    return ConditionOutcome(
        "waiting",
        f"the server has not executed {missing.count()} GTID(s) of the target yet: {missing}",
        payload,
    )


def assess_headroom(
    conn_id: str,
    checkpoint: GtidSet,
    policy: HeadroomPolicy,
    *,
    retention_override_hours: float | None = None,
) -> HeadroomAssessment:
    """The binlog headroom of ``checkpoint`` on the connection's server, judged against ``policy``."""
    endpoint = MySqlCdcHook(conn_id).get_endpoint()
    try:
        reading = read_headroom(endpoint, checkpoint, retention_override_hours=retention_override_hours)
    except (pymysql.MySQLError, RuntimeError) as error:
        return unknown_headroom(f"could not read the server's binlog files: {error}", policy)
    if reading is None:
        return unknown_headroom(
            "no retained binlog file can serve the checkpoint (its history is purged)", policy
        )
    return judge_headroom(reading, policy)
