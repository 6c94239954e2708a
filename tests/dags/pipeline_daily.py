"""Test DAG: the shipped example DAG file itself, configured through AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG."""

from __future__ import annotations

import runpy
from pathlib import Path

_EXAMPLE = Path(__file__).resolve().parents[2] / "dags" / "mysql_cdc_daily.py"
dag = runpy.run_path(str(_EXAMPLE))["dag"]
