"""Progress lines come at a steady cadence: every interval of wall time, whatever the work's rhythm."""

from __future__ import annotations

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.runtime.progress import PROGRESS_INTERVAL_S, Cadence


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_line_is_due_once_per_interval_passed_and_a_late_check_does_not_shift_the_next() -> None:
    clock = _Clock()
    cadence = Cadence(30.0, clock)
    due = []
    for now in (110, 129.9, 130, 131, 159, 165, 189.9, 190, 400, 401):
        clock.now = now
        due.append(cadence.due())
    # 130: the first interval; 165 (late) and 190 still keep the 30 s grid; 400 once, not seven times.
    assert due == [False, False, True, False, False, True, False, True, True, False]


def test_the_snapshot_and_the_apply_report_every_30_seconds_by_default() -> None:
    assert PROGRESS_INTERVAL_S == 30.0
    assert ApplyConfig(pipeline_id="p", lake_root="/lake", tables=("s.t",)).progress_interval_s == 30.0
