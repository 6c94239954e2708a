"""Trigger: polls a server's GTID state without holding a worker slot (deferrable sensors)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from airflow.triggers.base import BaseTrigger, TriggerEvent
from asgiref.sync import sync_to_async

from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.hooks.connection_errors import SourceLoginError, SourceUnreachableError, to_event
from airflow_mysql_cdc.hooks.gtid_conditions import ConditionKind, OnPurged, evaluate_condition


class GtidStateTrigger(BaseTrigger):
    """Fires once a condition is met or has failed, or when ``deadline`` (epoch seconds) passes.

    The event carries ``state`` (``met``, ``failed`` or ``timeout``), a message and the payload of
    the last read, so the resumed sensor can fail with the same clear message poke mode gives. A
    connection that cannot be opened fires ``error`` with the message and whether a retry can help
    (:mod:`airflow_mysql_cdc.hooks.connection_errors`): the sensor raises what poke mode raises.
    """

    def __init__(
        self,
        *,
        conn_id: str,
        kind: ConditionKind,
        gtid_set: str,
        on_purged: OnPurged = "fail",
        poll_interval_s: float = 60.0,
        deadline: float,
    ) -> None:
        super().__init__()
        self.conn_id = conn_id
        self.kind = kind
        self.gtid_set = gtid_set
        self.on_purged = on_purged
        self.poll_interval_s = poll_interval_s
        self.deadline = deadline

    def serialize(self) -> tuple[str, JsonObject]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "conn_id": self.conn_id,
                "kind": self.kind,
                "gtid_set": self.gtid_set,
                "on_purged": self.on_purged,
                "poll_interval_s": self.poll_interval_s,
                "deadline": self.deadline,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        # Connection lookups and PyMySQL are blocking: run them off the triggerer's event loop.
        evaluate = sync_to_async(evaluate_condition)
        while True:
            try:
                outcome = await evaluate(self.conn_id, self.kind, self.gtid_set, self.on_purged)
            except (SourceLoginError, SourceUnreachableError) as error:
                yield TriggerEvent(to_event(error))
                return
            if outcome.state != "waiting":
                yield TriggerEvent(outcome.to_event())
                return
            if time.time() >= self.deadline:
                yield TriggerEvent({**outcome.to_event(), "state": "timeout"})
                return
            self.log.info("%s; next check in %.0fs", outcome.message, self.poll_interval_s)
            await asyncio.sleep(min(self.poll_interval_s, max(0.0, self.deadline - time.time())))
