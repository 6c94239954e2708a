"""Where a run stands by its interval end in the lake's log of records (the chain's first step).

Invariant: a run is placed from the records in the lake alone
(:func:`~airflow_mysql_cdc.runs.lake.place_run`), and a run without a logical date has no place: it
is refused with an explanation. A lake whose log is empty but whose previous successful run left a
record in XCom (a pipeline started by an earlier version) has that record moved into the log first,
so the chain continues. A run dated before the pipeline's first interval ends *skipped*, not failed:
nothing is wrong and no retry could place it. Used by :func:`.checkpoint_chain.locate_run`.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from airflow_mysql_cdc.engine.values.checkpoint import CheckpointError, CheckpointRecord
from airflow_mysql_cdc.runs import lake
from airflow_mysql_cdc.runs.lake import Placement, RunBeforeFirstIntervalError, place_run

log = logging.getLogger("airflow_mysql_cdc.runs.checkpoint_chain")
PUBLISH_TASK_ID = "replicate"
"""The task whose XCom holds a run's record in the example DAG (earlier versions: publish_checkpoint)."""
LEGACY_PUBLISH_TASK_IDS = (PUBLISH_TASK_ID, "publish_checkpoint")


def refuse_without_logical_date(context: Any) -> None:
    if context.get("logical_date") is None:
        raise AirflowFailException(
            "this run has no logical date, so it has no place in the checkpoint chain (a segment is the "
            "data interval of a dated run). Trigger it with a logical date (airflow dags trigger "
            "--logical-date ..., or the date field of the UI's trigger form)."
        )


def _legacy_record(context: Any, pipeline_id: str, publish_task_id: str) -> CheckpointRecord | None:
    """The previous successful run's record from XCom: a chain started before records lived in the lake."""
    ti = context["ti"]
    previous = ti.get_previous_dagrun(state="success")
    if previous is None:
        return None
    for task_id in dict.fromkeys((publish_task_id, *LEGACY_PUBLISH_TASK_IDS)):
        raw = ti.xcom_pull(task_ids=task_id, dag_id=ti.dag_id, run_id=previous.run_id)
        if isinstance(raw, dict) and raw.get("segment_end"):
            return CheckpointRecord.from_dict(raw, pipeline_id=pipeline_id)
    return None


def placement_in_log(
    context: Any,
    pipeline_id: str,
    lake_root: str,
    storage_options: dict[str, str] | None,
    publish_task_id: str,
    acts: bool,
) -> tuple[Placement, int]:
    """Where the run stands by its interval end in the lake's log, and how many records the log
    held (a chain started before records lived in the lake has its last one moved in first)."""
    chain = lake.checkpoint_log(lake_root, pipeline_id, storage_options)
    try:
        records = chain.records()
        if not records:
            legacy = _legacy_record(context, pipeline_id, publish_task_id)
            if legacy is not None:
                log.info("moving the checkpoint of run %s from XCom into the lake's log", legacy.run_id)
                chain.append(legacy)
                records = [legacy]
        placement = place_run(
            records,
            context["data_interval_end"],
            context.get("run_id"),
            acts_at=datetime.datetime.now(datetime.UTC) if acts else None,
            cleared=bool(getattr(context.get("dag_run"), "clear_number", 0)),
        )
    except RunBeforeFirstIntervalError as error:
        # Nothing is wrong and nothing can be done for this date: skipped (its downstream too), so a
        # backfill over earlier dates does not stay red in the grid; the log line says why.
        # Logged as a line too: Airflow keeps a skip's reason in a field that plain log views omit.
        log.info("skipped: %s", error)
        raise AirflowSkipException(f"skipped: {error}") from error
    except CheckpointError as error:
        raise AirflowFailException(str(error)) from error
    return placement, len(records)
