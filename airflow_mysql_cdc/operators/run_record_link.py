"""The "Run record" extra link: from a pipeline task to the run's checkpoint record in the Airflow UI.

The record a run publishes (segment, start and end GTID sets, rows per table, the lake's position,
the actions its conf asked for) is the task's ``return_value`` XCom; the UI shows it on the task
instance's XCom tab. This link is the button that opens that tab, so nobody has to know where to
look. The record itself stays in XCom and in the lake's checkpoint log (which outlives the metadata
database's clean-up): the link adds no copy that could drift.

Why a link and not a rendered template field: template fields are rendered before ``execute`` and
the record exists only after it; a link is computed when the task finishes (the Task SDK pushes it
as XCom ``_link_MySqlCdcRunRecordLink``), and the API server reads it from there without importing
the provider.

Guarded by tests/unit/airflow/operators/test_run_record_link.py (the URL for plain and mapped task
instances) and the daily DAG test in tests/integration/test_pipeline_dag.py (the link a real task
instance pushed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey


def run_record_url(base_url: str, dag_id: str, run_id: str, task_id: str, map_index: int | None) -> str:
    """The UI's XCom tab of one task instance (the route ``dags/:dagId/runs/:runId/tasks/:taskId``)."""
    mapped = f"/mapped/{map_index}" if map_index is not None and map_index >= 0 else ""
    return f"{base_url.rstrip('/')}/dags/{dag_id}/runs/{quote(run_id, safe='')}/tasks/{task_id}{mapped}/xcom"


class MySqlCdcRunRecordLink(BaseOperatorLink):
    """Opens the task instance's XCom tab, where ``return_value`` is the run's checkpoint record."""

    name = "Run record"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk.configuration import conf

        base_url = conf.get("api", "base_url", fallback="http://localhost:8080/")
        return run_record_url(base_url, ti_key.dag_id, ti_key.run_id, ti_key.task_id, ti_key.map_index)
