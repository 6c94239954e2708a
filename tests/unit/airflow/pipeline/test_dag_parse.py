"""Parsing the example DAG file imports no Delta, Arrow or Spark: it is parsed for every task."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DAG_FILE = Path(__file__).resolve().parents[4] / "dags" / "mysql_cdc_daily.py"


def test_parsing_the_example_dag_file_imports_no_delta_arrow_or_spark(tmp_path: Path) -> None:
    program = f"""
import runpy, sys
dag = runpy.run_path({str(DAG_FILE)!r})["dag"]
heavy = sorted(m for m in ("deltalake", "pyarrow", "pyspark", "pymysqlreplication") if m in sys.modules)
print(dag.dag_id, heavy)
"""
    config = tmp_path / "pipeline.json"
    config.write_text(json.dumps({"lake_root": str(tmp_path / "lake")}))
    environment = {**os.environ, "AIRFLOW_MYSQL_CDC_PIPELINE_CONFIG": str(config)}
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=environment)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "mysql_cdc_daily []"
