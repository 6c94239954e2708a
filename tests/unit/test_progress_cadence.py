"""Progress lines come at a steady cadence: every interval of wall time, whatever the work's rhythm."""

from __future__ import annotations

import pytest

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


def test_the_applications_take_the_configured_interval_and_refuse_one_that_never_moves_on(tmp_path) -> None:
    from airflow_mysql_cdc.engine.apply.config import ApplyConfigError
    from airflow_mysql_cdc.engine.snapshot.config import SnapshotConfig

    snapshot = SnapshotConfig(lake_root="/lake", tables=("s.t",), progress_interval_s=5.0)
    (tmp_path / "config.json").write_text(snapshot.to_json())
    assert SnapshotConfig.from_file(tmp_path / "config.json").progress_interval_s == 5.0
    assert (
        ApplyConfig(
            pipeline_id="p", lake_root="/l", tables=("s.t",), progress_interval_s=5
        ).progress_interval_s
        == 5
    )
    with pytest.raises(
        ApplyConfigError, match="progress_interval_s must be a number of seconds above 0, not 0"
    ):
        ApplyConfig(pipeline_id="p", lake_root="/l", tables=("s.t",), progress_interval_s=0)
    with pytest.raises(ValueError, match="progress_interval_s must be a number of seconds above 0"):
        SnapshotConfig(lake_root="/lake", tables=("s.t",), progress_interval_s=-1)
