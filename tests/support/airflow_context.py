"""A real Airflow task context without a database: the task SDK's own RuntimeTaskInstance.

The template context a worker builds (``params`` validated from the run's conf, ``ds``,
``data_interval_end``, macros, ...) comes from ``RuntimeTaskInstance.get_template_context``; here
the run's details, which a worker gets from the API server, are given directly. Templates that
reach the API server at render time (``ti.xcom_pull``, ``var``, ``conn``) need a running Airflow:
the DAG-level integration tests cover those.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.api.datamodels._generated import DagRun, DagRunState, DagRunType, TIRunContext
from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance


def runtime_task_instance(
    task: BaseOperator,
    *,
    conf: dict[str, Any] | None = None,
    data_interval_end: datetime.datetime = datetime.datetime(2026, 11, 2, tzinfo=datetime.UTC),
    interval: datetime.timedelta = datetime.timedelta(days=1),
) -> RuntimeTaskInstance:
    """``task``'s instance in a scheduled run whose data interval ends at ``data_interval_end``."""
    start = data_interval_end - interval
    run_id = f"scheduled__{start.isoformat()}"
    dag_run = DagRun(
        dag_id=task.dag_id,
        run_id=run_id,
        logical_date=start,
        data_interval_start=start,
        data_interval_end=data_interval_end,
        run_after=data_interval_end,
        start_date=data_interval_end,
        end_date=None,
        run_type=DagRunType.SCHEDULED,
        state=DagRunState.RUNNING,
        conf=conf,
        consumed_asset_events=[],
        partition_key=None,
    )
    return RuntimeTaskInstance.model_construct(
        id=uuid.uuid4(),
        task_id=task.task_id,
        dag_id=task.dag_id,
        run_id=run_id,
        try_number=1,
        dag_version_id=uuid.uuid4(),
        map_index=-1,
        task=task,
        max_tries=0,
        start_date=data_interval_end,
        _ti_context_from_server=TIRunContext(dag_run=dag_run, max_tries=0),
    )
