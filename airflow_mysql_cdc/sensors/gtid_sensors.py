"""Sensors on a server's GTID state: resumability of a checkpoint, and a target set being reached.

Both support poke, reschedule and deferrable mode and judge the server through one shared
function (:mod:`airflow_mysql_cdc.hooks.gtid_conditions`). A condition that waiting cannot fix
(purged binlogs) fails at once with AirflowFailException, never retried; a timeout fails with
AirflowSensorTimeout whose message says what was still missing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException, AirflowSensorTimeout

from airflow_mysql_cdc.hooks.gtid_conditions import (
    ConditionKind,
    ConditionOutcome,
    OnPurged,
    evaluate_condition,
)
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.triggers.gtid_state import GtidStateTrigger


class _GtidConditionSensor(BaseSensorOperator):
    kind: ConditionKind
    ui_color = "#fdf3e1"

    def __init__(
        self,
        *,
        mysql_cdc_conn_id: str = MySqlCdcHook.default_conn_name,
        deferrable: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.mysql_cdc_conn_id = mysql_cdc_conn_id
        self.deferrable = deferrable

    # What the subclass waits for.
    def _gtid_set_text(self) -> str:
        raise NotImplementedError

    def _on_purged(self) -> OnPurged:
        return "fail"

    def _evaluate(self) -> ConditionOutcome:
        return evaluate_condition(self.mysql_cdc_conn_id, self.kind, self._gtid_set_text(), self._on_purged())

    def _finish(self, outcome: ConditionOutcome) -> dict[str, Any]:
        if outcome.state == "failed":
            raise AirflowFailException(outcome.message)
        self.log.info(outcome.message)
        return outcome.payload

    def poke(self, context: Any) -> bool | PokeReturnValue:
        outcome = self._evaluate()
        if outcome.state == "waiting":
            self.log.info("%s", outcome.message)
            return False
        return PokeReturnValue(is_done=True, xcom_value=self._finish(outcome))

    def execute(self, context: Any) -> Any:
        if self.deferrable:
            outcome = self._evaluate()
            if outcome.state != "waiting":
                return self._finish(outcome)
            self.log.info("%s; deferring to the triggerer", outcome.message)
            self.defer(
                trigger=GtidStateTrigger(
                    conn_id=self.mysql_cdc_conn_id,
                    kind=self.kind,
                    gtid_set=self._gtid_set_text(),
                    on_purged=self._on_purged(),
                    poll_interval_s=self.poke_interval,
                    deadline=time.time() + self.timeout,
                ),
                method_name="execute_complete",
                # A safety net above our own deadline, in case the triggerer is down.
                timeout=timedelta(seconds=self.timeout + 10 * self.poke_interval),
            )
        try:
            return super().execute(context)
        except AirflowSensorTimeout as timeout:
            raise AirflowSensorTimeout(f"{timeout} Still: {self._evaluate().message}") from timeout

    def execute_complete(self, context: Any, event: dict[str, Any]) -> dict[str, Any]:
        if event["state"] == "timeout":
            raise AirflowSensorTimeout(f"timed out after {self.timeout}s. Still: {event['message']}")
        return self._finish(ConditionOutcome(event["state"], event["message"], event["payload"]))


class MySqlCdcResumabilitySensor(_GtidConditionSensor):
    """Waits until the pipeline can resume from ``checkpoint`` on the server.

    Resumable iff ``gtid_purged ⊆ checkpoint ⊆ gtid_executed``:

    - purged ⊄ checkpoint: the binlog we need is gone. With ``on_purged="fail"`` (default) the task
      fails at once, naming the missing GTIDs; with ``on_purged="resnapshot"`` it succeeds and
      records ``resnapshot_needed: true`` in its XCom return value for a branch to act on.
    - checkpoint ⊄ executed: the server lacks transactions already applied (a restore, or a
      lagging replica after failover). It keeps waiting, since a replica may catch up, and fails
      at ``timeout`` with the missing set.

    The XCom return value is a dict: ``verdict``, ``resumable``, ``resnapshot_needed``, the sets.

    :param checkpoint: GTID set text to resume from (templated; usually the previous run's end set).
    :param empty_checkpoint_passes: an empty checkpoint means the pipeline has not started yet (its
        first run snapshots before it streams), so there is nothing to resume: succeed at once.
    """

    kind: ConditionKind = "resumable"
    template_fields: Sequence[str] = ("checkpoint", "mysql_cdc_conn_id")

    def __init__(
        self,
        *,
        checkpoint: str | None,
        on_purged: OnPurged = "fail",
        empty_checkpoint_passes: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.empty_checkpoint_passes = empty_checkpoint_passes
        if on_purged not in ("fail", "resnapshot"):
            raise ValueError(f"on_purged must be 'fail' or 'resnapshot', not {on_purged!r}")
        self.checkpoint = checkpoint
        self.on_purged = on_purged

    def _gtid_set_text(self) -> str:
        return self.checkpoint or ""

    def _on_purged(self) -> OnPurged:
        return self.on_purged

    def _evaluate(self) -> ConditionOutcome:
        if self.empty_checkpoint_passes and not (self.checkpoint or "").strip():
            return ConditionOutcome(
                "met",
                "no checkpoint yet: the pipeline starts with a snapshot, nothing to resume",
                {"verdict": "first_run", "resumable": True, "resnapshot_needed": False},
            )
        return super()._evaluate()


class MySqlGtidReachedSensor(_GtidConditionSensor):
    """Waits until the server's ``gtid_executed`` contains ``target`` (e.g. a replica catching up).

    :param target: GTID set text (templated).
    """

    kind: ConditionKind = "reached"
    template_fields: Sequence[str] = ("target", "mysql_cdc_conn_id")

    def __init__(self, *, target: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target

    def _gtid_set_text(self) -> str:
        return self.target or ""
