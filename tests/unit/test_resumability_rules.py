"""Resumability is pure set algebra: purged ⊆ checkpoint ⊆ executed."""

from __future__ import annotations

from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.resumability import Verdict, assess_resumability

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def _assess(checkpoint: str, purged: str, executed: str):
    return assess_resumability(GtidSet.parse(checkpoint), GtidSet.parse(purged), GtidSet.parse(executed))


def test_checkpoint_between_purged_and_executed_is_resumable() -> None:
    assessment = _assess(f"{U}:1-50", f"{U}:1-10", f"{U}:1-100")
    assert assessment.verdict is Verdict.RESUMABLE
    assert assessment.to_dict()["resumable"] is True


def test_purged_transactions_beyond_the_checkpoint_need_a_resnapshot_and_are_named() -> None:
    assessment = _assess(f"{U}:1-5", f"{U}:1-10", f"{U}:1-100")
    assert assessment.verdict is Verdict.BINLOG_PURGED
    assert assessment.purged_but_not_applied == GtidSet.parse(f"{U}:6-10")
    assert f"{U}:6-10" in assessment.message
    assert "Re-snapshot" in assessment.message
    assert assessment.to_dict()["resnapshot_needed"] is True


def test_checkpoint_ahead_of_the_server_means_the_server_is_behind() -> None:
    assessment = _assess(f"{U}:1-120", f"{U}:1-10", f"{U}:1-100")
    assert assessment.verdict is Verdict.SERVER_BEHIND
    assert str(assessment.applied_but_not_on_server) == f"{U}:101-120"
    assert "lagging replica" in assessment.message


def test_empty_checkpoint_on_a_server_that_purged_nothing_is_resumable() -> None:
    assert _assess("", "", f"{U}:1-3").verdict is Verdict.RESUMABLE


def test_purged_is_judged_before_behind_because_waiting_cannot_fix_it() -> None:
    other = "4e11fa47-71ca-11e1-9e33-c80aa9429562"
    assert _assess(f"{U}:1-5,{other}:1-9", f"{U}:1-10", f"{U}:1-100").verdict is Verdict.BINLOG_PURGED
