"""A templated ``tables`` argument: checked when the DAG is parsed, or rendered and checked at run time.

Operators that take a table list normalise it to ``schema.table`` names in ``__init__``, so a wrong
name fails the DAG's import, not a run. A list given as a Jinja template (``"{{ params.tables }}"``,
``["{{ var.value.first_table }}", ...]``) cannot be checked then: it is kept as given, Airflow
renders it before ``execute`` (``tables`` is a template field), and :func:`rendered_table_names`
checks it at the start of ``execute``. Guarded by tests/unit/airflow/operators/test_template_rendering.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from airflow_mysql_cdc.operators.prerequisites import parse_table_list


def _templated(tables: str | Sequence[str]) -> bool:
    items = [tables] if isinstance(tables, str) else list(tables)
    return any("{{" in str(item) or "{%" in str(item) for item in items)


def table_names_argument(tables: str | Sequence[str]) -> tuple[str, ...]:
    """``tables`` as normalised names now, or as given when it is a template (rendered later).

    Typed as the names: a template held here is rendered and replaced by them (``execute`` calls
    :func:`rendered_table_names` first) before anything reads it as names."""
    return cast("tuple[str, ...]", tables) if _templated(tables) else rendered_table_names(tables)


def rendered_table_names(tables: str | Sequence[str]) -> tuple[str, ...]:
    """``schema.table`` names from a list or a comma/whitespace-separated string (a rendered template)."""
    return tuple(str(ref) for ref in parse_table_list(tables))
