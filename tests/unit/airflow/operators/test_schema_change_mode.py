"""A mistyped ``schema_changes`` fails when the DAG is parsed, naming the task and the choices."""

from __future__ import annotations

import pytest

from airflow_mysql_cdc.engine.apply.config import ApplyConfigError
from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from airflow_mysql_cdc.operators.replicate import MySqlCdcReplicateOperator


@pytest.mark.parametrize("operator_class", [MySqlCdcBinlogApplyOperator, MySqlCdcReplicateOperator])
def test_an_unknown_schema_change_mode_is_refused_when_the_dag_is_parsed(operator_class) -> None:
    with pytest.raises(ApplyConfigError, match=r"task 'apply': schema_changes must be one of evolve, stop"):
        operator_class(
            task_id="apply",
            pipeline_id="p",
            tables=["shop.orders"],
            lake_root="/lake",
            schema_changes="Evolve",
        )


@pytest.mark.parametrize("operator_class", [MySqlCdcBinlogApplyOperator, MySqlCdcReplicateOperator])
def test_an_unknown_statement_change_mode_is_refused_when_the_dag_is_parsed(operator_class) -> None:
    with pytest.raises(
        ApplyConfigError, match=r"task 'apply': statement_changes must be one of stop, resnapshot"
    ):
        operator_class(
            task_id="apply",
            pipeline_id="p",
            tables=["shop.orders"],
            lake_root="/lake",
            statement_changes="skip",
        )
