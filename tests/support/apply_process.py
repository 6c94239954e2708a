"""Run the binlog application as its own process, as spark-submit would, for crash and fencing tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint


def launch_application(
    config: ApplyConfig, workdir: Path, endpoint: MySqlEndpoint, environment: dict[str, str] | None = None
) -> subprocess.Popen:
    """The application on ``config``; ``environment`` adds variables (the lake's secret options)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_file = workdir / "config.json"
    config_file.write_text(config.to_json())
    return subprocess.Popen(
        [
            sys.executable, "-m", "airflow_mysql_cdc.engine.entrypoints.binlog_to_delta",
            "--config", str(config_file), "--result-file", str(workdir / "result.json"),
        ],
        env={**os.environ, **endpoint.to_environment(), **(environment or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
