"""A run's result is one typed value on both sides of spark-submit: one re-snapshot rule, one combine."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from airflow_mysql_cdc.engine.apply.config import (
    ApplyConfig,
    ApplyConfigError,
    ApplyResult,
    check_schema_change_mode,
)
from airflow_mysql_cdc.engine.lake.evolution import AddedColumn, TableEvolution
from airflow_mysql_cdc.engine.lake.sink import Sink
from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.unit.sink_fixtures import RecordingSink, through

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def _step(start: int, end: int, *changes: TableEvolution, rows: int = 1) -> ApplyResult:
    result = ApplyResult.starting("p", through(start), through(start))
    result.end_gtids = through(end)
    result.transactions, result.batches, result.duration_s = end - start, 1, 1.5
    result.rows_by_table = {"shop.orders": rows}
    result.schema_changes = list(changes)
    result.last_commit_timestamp_us = end
    return result


def test_a_table_waits_for_a_snapshot_only_when_its_last_change_in_the_run_says_so() -> None:
    result = _step(
        0,
        9,
        TableEvolution("shop.a", "resnapshot", "retyped", gtid=f"{UUID}:3"),
        TableEvolution("shop.b", "leave", "dropped", gtid=f"{UUID}:4"),
        TableEvolution("shop.c", "unchanged", "index only", gtid=f"{UUID}:5"),
        TableEvolution("shop.c", "resnapshot", "retyped", gtid=f"{UUID}:6"),
    )
    assert result.to_resnapshot == ["shop.a", "shop.c"]


def test_steps_combine_to_the_first_start_the_last_end_and_the_sums() -> None:
    first = _step(1, 5, TableEvolution("shop.a", "resnapshot", "retyped", gtid=f"{UUID}:3"), rows=4)
    first.caught_up = {"shop.x": through(4)}
    second = _step(5, 9, rows=2)
    second.already_applied = True
    combined = ApplyResult.combine([first, second])
    assert (combined.requested_start, combined.resumed_from, combined.end_gtids) == (
        through(1),
        through(1),
        through(9),
    )
    assert (combined.transactions, combined.batches, combined.duration_s) == (8, 2, 3.0)
    assert combined.rows_by_table == {"shop.orders": 6}
    assert [c.table for c in combined.schema_changes] == ["shop.a"]
    assert combined.caught_up == {"shop.x": through(4)}
    assert combined.already_applied is False and combined.last_commit_timestamp_us == 9
    assert combined.to_resnapshot == ["shop.a"]  # a combined result is read by the same rule


def test_the_result_survives_its_json_form_with_typed_schema_changes() -> None:
    result = _step(
        0,
        7,
        TableEvolution.evolving(
            "shop.orders", "added note", (AddedColumn(ColumnType("note", "text"), "n/a"),), ("old",)
        ).at(f"{UUID}:2"),
    )
    result.caught_up = {"shop.x": GtidSet.parse(f"{UUID}:1-3")}
    back = ApplyResult.from_dict(result.to_dict() | {"a_key_of_a_newer_engine": 1})
    assert back == result
    [change] = back.schema_changes
    assert (change.added, change.dropped, change.gtid) == (("note",), ("old",), f"{UUID}:2")
    assert change.describe() == f"Schema change {UUID}:2: shop.orders evolved in place: added note"


def test_a_schema_change_read_back_from_a_result_cannot_be_applied() -> None:
    report = TableEvolution.from_json(
        TableEvolution.evolving("t.a", "x", (AddedColumn(ColumnType("n", "text")),), ()).to_json()
    )
    with pytest.raises(ValueError, match="names the columns added but not their types"):
        report.check_applicable()
    with pytest.raises(ValueError, match="action is one of"):
        TableEvolution.from_json({"table": "t.a", "action": "rename", "reason": ""})
    with pytest.raises(ValueError, match="cause is one of schema_change, statement_logged_change"):
        TableEvolution.from_json({"table": "t.a", "action": "leave", "reason": "", "cause": "ddl"})
    older = TableEvolution.from_json({"table": "t.a", "action": "leave", "reason": "dropped", "gtid": "g:1"})
    assert older.describe() == "Schema change g:1: t.a left the pipeline; its lake table is kept: dropped"


def test_a_result_file_of_another_program_is_refused_with_what_to_check() -> None:
    with pytest.raises(ValueError, match="lacks end_gtids, pipeline_id.*another installed version"):
        ApplyResult.from_dict({"transactions": 0})


def test_an_unknown_schema_change_mode_is_refused_with_the_choices_and_where() -> None:
    with pytest.raises(
        ApplyConfigError, match=r"task 'apply': schema_changes must be one of evolve, stop, not 'evolv'"
    ):
        check_schema_change_mode("evolv", where="task 'apply'")
    with pytest.raises(ApplyConfigError, match="configuration: schema_changes must be one of"):
        ApplyConfig(pipeline_id="p", lake_root="/l", tables=("a.b",), schema_changes="skip")  # type: ignore[arg-type]


def test_the_test_sink_implements_every_member_of_the_sink_contract() -> None:
    members = {name for name in vars(Sink) if not name.startswith("_")}
    sink = RecordingSink()
    assert {name for name in members if not hasattr(sink, name)} == set()


def test_the_sink_contract_and_the_evolution_type_load_no_delta_writer_or_arrow() -> None:
    program = (
        "import sys\n"
        "import airflow_mysql_cdc.engine.lake.evolution, airflow_mysql_cdc.engine.apply.config\n"
        "print(sorted(m for m in ('deltalake', 'pyarrow', 'pyspark') if m in sys.modules))\n"
        "import airflow_mysql_cdc.engine.lake.sink\n"
        "print(sorted(m for m in ('deltalake', 'pyspark') if m in sys.modules))\n"
    )
    output = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert output.stdout.split() == ["[]", "[]"]


def test_stops_and_unsettled_tables_survive_the_json_forms() -> None:
    """A result's stops (the run fails on them) and stopped tables; a configuration's unsettled sets."""
    result = ApplyResult.starting("p", GtidSet(), GtidSet())
    result.record_stop(TableEvolution.stopping("shop.orders", "its target was changed by another writer"))
    back = ApplyResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert [stop.table for stop in back.stopped] == ["shop.orders"]
    assert back.stopped_tables == result.stopped_tables
    assert ApplyResult.combine([back, ApplyResult.starting("p", GtidSet(), GtidSet())]).stopped_tables == (
        result.stopped_tables
    )
    window = GtidSet.parse("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9")
    config = ApplyConfig(
        pipeline_id="p", lake_root="/l", tables=("shop.orders",), unsettled={"shop.orders": window}
    )
    assert ApplyConfig.from_dict(json.loads(config.to_json())).unsettled == {"shop.orders": window}
