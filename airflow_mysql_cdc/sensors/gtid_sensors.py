"""Sensors on a server's GTID state: resumability of a checkpoint, and a target set being reached.

Both support poke, reschedule and deferrable mode and judge the server through one shared
function (:mod:`airflow_mysql_cdc.hooks.gtid_conditions`). ``deferrable`` defaults to Airflow's
``[operators] default_deferrable`` (False unless set), as in the first-party providers. A condition
that waiting cannot fix (purged binlogs) fails at once with AirflowFailException, never retried; a
timeout fails with AirflowSensorTimeout whose message says what was still missing.

Once a checkpoint is resumable, the resumability sensor also looks ahead (docs/operations.md,
"Binlog retention headroom"): how long the server keeps the binlog the checkpoint needs, against
the schedule (:mod:`airflow_mysql_cdc.engine.values.headroom`), and whether the position is stale
(:mod:`airflow_mysql_cdc.engine.values.staleness`). Each run logs one INFO line with the headroom
and sets the gauges ``mysql_cdc.binlog.headroom_seconds`` and ``mysql_cdc.checkpoint.behind_seconds``;
below the thresholds a WARNING line, and the counters ``mysql_cdc.binlog.headroom_low`` /
``mysql_cdc.checkpoint.stale`` count 1 (0 otherwise, so their series go on); a retention shorter
than one schedule interval fails the run with the statement that raises it. The pipeline id is the
metrics' ``pipeline`` tag, never part of a name (docs/metrics.md, :mod:`..hooks.metrics`).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.configuration import conf
from airflow.sdk.exceptions import AirflowFailException, AirflowSensorTimeout

from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.headroom import HeadroomAssessment, HeadroomLevel, HeadroomPolicy
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.engine.values.staleness import StalenessAssessment, judge_staleness
from airflow_mysql_cdc.hooks.connection_errors import from_event
from airflow_mysql_cdc.hooks.gtid_conditions import (
    ConditionKind,
    ConditionOutcome,
    OnPurged,
    assess_headroom,
    evaluate_condition,
)
from airflow_mysql_cdc.hooks.metrics import emit
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.hooks.next_steps import with_next_step
from airflow_mysql_cdc.triggers.gtid_state import GtidStateTrigger


class _GtidConditionSensor(BaseSensorOperator):
    kind: ConditionKind
    ui_color = "#fdf3e1"

    def __init__(
        self,
        *,
        mysql_cdc_conn_id: str = MySqlCdcHook.default_conn_name,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
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

    def _finish(self, outcome: ConditionOutcome) -> JsonObject:
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

    def execute_complete(self, context: Any, event: JsonObject) -> JsonObject:
        if event["state"] == "error":
            raise from_event(event)
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

    When resumable, the XCom value also holds ``headroom`` (how long until the checkpoint's binlog
    may be purged, judged against ``schedule_interval × retention_headroom_runs``) and
    ``staleness`` (docs/operations.md, "Binlog retention headroom").

    :param checkpoint: GTID set text to resume from (templated; usually the previous run's end set).
    :param empty_checkpoint_passes: an empty checkpoint means the pipeline has not started yet (its
        first run snapshots before it streams), so there is nothing to resume: succeed at once.
    :param schedule_interval: the time between two runs of the pipeline; None: the headroom is
        logged but not judged.
    :param retention_headroom_runs: warn when the checkpoint's binlog would be purged before this
        many intervals have passed (that many failed or missed runs in a row).
    :param binlog_retention_hours: how long the server keeps binlogs, when it cannot say itself
        (Cloud SQL) or says something else than what is true; wins over the server.
    :param stale_after: warn when the server has transactions the checkpoint lacks and the checkpoint
        covers data only up to longer ago than this; None: no staleness warning.
    :param checkpoint_segment_end: ISO time up to which the checkpoint covers data (the chain head's
        ``segment_end``; templated); empty: unknown.
    :param pipeline_id: the metrics' ``pipeline`` tag; default: the DAG id.
    :param check_headroom: False: only the resumability verdict, no binlog reads beyond it.
    """

    kind: ConditionKind = "resumable"
    template_fields: Sequence[str] = (
        "checkpoint",
        "mysql_cdc_conn_id",
        "checkpoint_segment_end",
        "pipeline_id",
    )

    def __init__(
        self,
        *,
        checkpoint: str | None,
        on_purged: OnPurged = "fail",
        empty_checkpoint_passes: bool = False,
        schedule_interval: timedelta | None = None,
        retention_headroom_runs: int = 3,
        binlog_retention_hours: float | None = None,
        stale_after: timedelta | None = None,
        checkpoint_segment_end: str | None = None,
        pipeline_id: str | None = None,
        check_headroom: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.empty_checkpoint_passes = empty_checkpoint_passes
        if on_purged not in ("fail", "resnapshot"):
            raise ValueError(f"on_purged must be 'fail' or 'resnapshot', not {on_purged!r}")
        if retention_headroom_runs < 1:
            raise ValueError(f"retention_headroom_runs must be at least 1, not {retention_headroom_runs}")
        self.checkpoint = checkpoint
        self.on_purged = on_purged
        self.schedule_interval = schedule_interval
        self.retention_headroom_runs = retention_headroom_runs
        self.binlog_retention_hours = binlog_retention_hours
        self.stale_after = stale_after
        self.checkpoint_segment_end = checkpoint_segment_end
        self.pipeline_id = pipeline_id
        self.check_headroom = check_headroom

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

    def _finish(self, outcome: ConditionOutcome) -> JsonObject:
        payload = super()._finish(outcome)
        if not self.check_headroom or payload.get("verdict") != "resumable":
            return payload
        checkpoint = GtidSet.parse(self.checkpoint or "")
        headroom = assess_headroom(
            self.mysql_cdc_conn_id,
            checkpoint,
            HeadroomPolicy(
                self.schedule_interval.total_seconds() if self.schedule_interval else None,
                self.retention_headroom_runs,
            ),
            retention_override_hours=self.binlog_retention_hours,
        )
        staleness = judge_staleness(
            checkpoint,
            GtidSet.parse(payload.get("gtid_executed") or ""),
            _parse_time(self.checkpoint_segment_end),
            datetime.datetime.now(datetime.UTC),
            self.stale_after,
        )
        self._report(headroom, staleness)
        return {**payload, "headroom": headroom.to_dict(), "staleness": staleness.to_dict()}

    def _report(self, headroom: HeadroomAssessment, staleness: StalenessAssessment) -> None:
        """One INFO line each run; WARNING lines and counters below the thresholds; fail when unsafe."""
        pipeline = self.pipeline_id or self.dag_id
        if headroom.headroom_s is not None:
            emit("mysql_cdc.binlog.headroom_seconds", headroom.headroom_s, pipeline=pipeline)
        if staleness.behind_s is not None:
            emit("mysql_cdc.checkpoint.behind_seconds", staleness.behind_s, pipeline=pipeline)
        low = headroom.level in (HeadroomLevel.LOW, HeadroomLevel.UNSAFE)
        emit("mysql_cdc.binlog.headroom_low", int(low), pipeline=pipeline)
        emit("mysql_cdc.checkpoint.stale", int(staleness.stale), pipeline=pipeline)
        if headroom.level is HeadroomLevel.UNSAFE:
            raise AirflowFailException(with_next_step(headroom.message, headroom.next_step))
        if headroom.level in (HeadroomLevel.LOW, HeadroomLevel.UNKNOWN):
            self.log.warning("%s", headroom.message)
        else:
            self.log.info("%s", headroom.message)
        if staleness.stale:
            self.log.warning("%s", staleness.message)
        else:
            self.log.info("position: %s", staleness.message)


def _parse_time(text: str | None) -> datetime.datetime | None:
    if not text or not text.strip() or text.strip() == "None":
        return None
    moment = datetime.datetime.fromisoformat(text.strip())
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


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
