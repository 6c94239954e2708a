"""The reader's position: ``start | {every GTID consumed}``, kept cheaply on the hot path.

Invariant: :attr:`PositionTracker.value` is exactly the start set united with every GTID passed to
:meth:`PositionTracker.add`, and ``gtid in tracker`` answers membership in that set. Building a new
immutable ``GtidSet`` per transaction costs a set union each time; instead consecutive GTIDs of a
server extend one open interval and the ``GtidSet`` is materialised only when someone asks for it
(a stop rule on a heartbeat, an error message, the caller after the read).
"""

from __future__ import annotations

from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet


class PositionTracker:
    __slots__ = ("_base", "_pending", "_highest")

    def __init__(self, start: GtidSet) -> None:
        self._base = start
        self._pending: dict[str, list[list[int]]] = {}
        # Highest untagged number per server UUID in the position: anything above is not in it.
        self._highest: dict[str, int] = {
            server_uuid: intervals[-1][1]
            for (server_uuid, tag), intervals in start.intervals_by_source.items()
            if not tag
        }

    def add(self, gtid: Gtid) -> None:
        intervals = self._pending.setdefault(gtid.uuid, [])
        number = gtid.number
        if intervals and intervals[-1][1] + 1 == number:
            intervals[-1][1] = number
        else:
            intervals.append([number, number])
        if number > self._highest.get(gtid.uuid, 0):
            self._highest[gtid.uuid] = number

    def __contains__(self, gtid: Gtid) -> bool:
        if not gtid.tag and gtid.number > self._highest.get(gtid.uuid, 0):
            return False
        return gtid in self.value

    @property
    def value(self) -> GtidSet:
        if self._pending:
            consumed = GtidSet(
                {
                    (server_uuid, ""): [(start, end) for start, end in pairs]
                    for server_uuid, pairs in self._pending.items()
                }
            )
            self._base = self._base | consumed
            self._pending = {}
        return self._base
