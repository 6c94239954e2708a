"""Test DAG (an airflow DAG file): the custom DAG example of docs/custom-dags.md, from docs/examples/."""

from __future__ import annotations

import runpy
from pathlib import Path

_EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "custom_dag.py"
dag = runpy.run_path(str(_EXAMPLE))["dag"]
