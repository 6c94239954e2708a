"""When a long task says how far it got: every ``interval_s`` of wall time, and at its end.

Invariant: progress lines come at a steady cadence, whatever the work's rhythm. A snapshot logged
one line per wave of chunks (hundreds of lines for a big table on many cores, none for minutes when
one wave was slow), and the binlog application every 10 s; both now log every
:data:`PROGRESS_INTERVAL_S` (30 s) and once when done, so a task log of an hour's work holds about
120 progress lines per table or segment and the last one is always there (issue 26, item 4).
Guarded by ``tests/unit/test_progress_cadence.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

PROGRESS_INTERVAL_S = 30.0
"""How often the snapshot and the binlog application log a progress line, unless configured
(``progress_interval_s`` in the pipeline JSON and the operators)."""


def check_progress_interval(seconds: object, error: type[Exception]) -> None:
    """Raise ``error`` unless ``seconds`` is a number of seconds above 0 (a cadence of 0 never moves on)."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise error(
            f"progress_interval_s must be a number of seconds above 0, not {seconds!r} (the task log "
            f"gets a progress line that often; leave it out for {PROGRESS_INTERVAL_S:.0f})"
        )


class Cadence:
    """Says when the next progress line is due: ``interval_s`` after the start, then every
    ``interval_s`` (a late check does not shift the later ones)."""

    def __init__(self, interval_s: float = PROGRESS_INTERVAL_S, clock: Callable[[], float] = time.monotonic):
        self._interval_s = interval_s
        self._clock = clock
        self._next = clock() + interval_s

    def due(self) -> bool:
        """True once per interval that passed since the last True; the caller logs then."""
        now = self._clock()
        if now < self._next:
            return False
        while self._next <= now:
            self._next += self._interval_s
        return True
