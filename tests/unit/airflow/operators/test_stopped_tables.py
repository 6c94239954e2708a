"""A table the application stopped: the task pushes its result, then fails, never silently green.

The application itself (engine) is proven on MySQL and Delta in tests/integration/test_batch_self_check.py
and test_outside_changes.py; here its result is given, and the Airflow side's answer is checked: the
pushed result, the failure and its message, the record's fact, the warning a later run logs.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from airflow.sdk.exceptions import AirflowFailException
from deltalake import CommitProperties, DeltaTable

from airflow_mysql_cdc.engine.apply.config import ApplyResult
from airflow_mysql_cdc.engine.errors import NextStep
from airflow_mysql_cdc.engine.lake.departures import Departure, mark_departed
from airflow_mysql_cdc.engine.lake.evolution import TableEvolution, stopped_words
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineStateStore
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.hooks.next_steps import in_airflow
from airflow_mysql_cdc.operators import binlog_apply
from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator, TablesStoppedError
from airflow_mysql_cdc.runs.record_facts import stopped_tables

REASON = "its target was changed by another writer after the pipeline's last commit to it (version 3)"


class _TaskInstance:
    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


@pytest.fixture(autouse=True)
def _no_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lineage reads the MySQL connection; its own tests cover it."""
    lineage = SimpleNamespace(done=lambda rows: None)
    monkeypatch.setattr(MySqlCdcBinlogApplyOperator, "planned_lineage", lambda self: lineage)


def _result(stopping: bool) -> ApplyResult:
    result = ApplyResult("shop", GtidSet(), GtidSet(), GtidSet(), rows_by_table={"shop.customers": 3})
    if stopping:
        result.record_stop(TableEvolution.stopping("shop.orders", REASON))
    else:
        result.stopped_tables["shop.orders"] = stopped_words("shop.orders", REASON)
    return result


def test_the_run_that_stops_a_table_pushes_its_result_then_fails_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(binlog_apply, "apply_binlog", lambda *args, **kwargs: _result(stopping=True))
    operator = MySqlCdcBinlogApplyOperator(
        task_id="apply", pipeline_id="shop", tables=["shop.orders"], lake_root="/l"
    )
    ti = _TaskInstance()
    with pytest.raises(TablesStoppedError) as failure:
        operator.execute({"ti": ti})
    assert ti.pushed["return_value"]["rows_by_table"] == {"shop.customers": 3}  # the rest is real
    assert str(failure.value) == (
        "1 table(s) stopped in this run; the other tables were applied and their progress is published. "
        + stopped_words("shop.orders", REASON)
        + in_airflow(NextStep.resnapshot("shop.orders"))
    )
    assert 'the conf {"resnapshot": ["shop.orders"]}' in str(failure.value)
    assert isinstance(failure.value, AirflowFailException)  # Airflow does not retry it


def test_a_later_run_with_the_table_still_stopped_ends_green(monkeypatch: pytest.MonkeyPatch) -> None:
    """It warns (apply_binlog logs every stopped table, every run) and sets the gauge, but the run that
    stopped it already failed: nothing new happened."""
    monkeypatch.setattr(binlog_apply, "apply_binlog", lambda *args, **kwargs: _result(stopping=False))
    operator = MySqlCdcBinlogApplyOperator(
        task_id="apply", pipeline_id="shop", tables=["shop.orders"], lake_root="/l"
    )
    assert operator.execute({"ti": _TaskInstance()})["stopped_tables"] == {
        "shop.orders": stopped_words("shop.orders", REASON)
    }


def test_the_record_names_each_stopped_table_with_why(tmp_path: Path) -> None:
    lake_root = str(tmp_path)
    store = PipelineStateStore(LakeLayout(lake_root).state, "shop")
    state = store.claim("host:1:abc", GtidSet())
    state = store.commit(state, GtidSet(), 1, members={"db.orders": ""})
    for name in ("refunds", "orders"):
        target = DeltaTable.create(
            LakeLayout(lake_root).target("db", name), schema=pa.schema([("id", pa.int64())])
        )
        mark_departed(target, Departure(f"db.{name}", "", "stop", REASON, ""), CommitProperties())
    # db.orders is a member again (re-snapshotted since): its old mark no longer holds.
    assert stopped_tables(lake_root, ["db.orders", "db.refunds"], state.members, None) == {
        "db.refunds": REASON
    }
