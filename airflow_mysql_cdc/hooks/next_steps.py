"""How to take an engine's next step in Airflow: the words the engine leaves to its orchestrator.

Invariant: the engine names what to do by meaning (:class:`~airflow_mysql_cdc.engine.errors.NextStep`:
re-snapshot these tables, run the segment again); this module is the one place that says how in
Airflow (a run conf, an operator argument, clearing a task), so a renamed conf key or operator is
changed here and the engine's words stay true. The operators and sensors append
:func:`in_airflow` to the failure a user reads in the UI. Guarded by tests/unit/test_next_steps.py.
"""

from __future__ import annotations

import json

from airflow_mysql_cdc.engine.errors import NextStep, Step


def in_airflow(step: NextStep | None) -> str:
    """One sentence (with a leading space) saying how to take ``step`` in Airflow; "" for None."""
    if step is None:
        return ""
    if step.step is Step.RESNAPSHOT:
        if step.tables:
            conf, own = json.dumps({"resnapshot": list(step.tables)}), f"tables={list(step.tables)!r}"
        else:
            conf, own = '{"resnapshot": [...]} listing every table of the pipeline', "the pipeline's tables"
        return (
            f" In Airflow: trigger the pipeline DAG with the conf {conf} (docs/operations.md, "
            f'"A table stopped"); in a DAG of your own, run MySqlCdcSnapshotOperator with {own} and '
            "restart=True."
        )
    return " In Airflow: clear this task once the cause is fixed; the next attempt continues from the lake."


def with_next_step(message: str, step: NextStep | None) -> str:
    """``message`` followed by how to take ``step`` in Airflow (unchanged when it names none)."""
    return message + in_airflow(step)
