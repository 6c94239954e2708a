"""Moved to :mod:`airflow_mysql_cdc.runs.checkpoint_chain`: this name keeps custom DAGs written for
0.1 (``from airflow_mysql_cdc.pipeline import checkpoint_chain``) working, with a warning.

The chain sits below the operators now (the layer test, ``tests/unit/test_package_layers.py``); the
DAG factory's folder only re-exports it, so nothing below imports from here.
"""

from __future__ import annotations

import warnings

from airflow_mysql_cdc.runs.checkpoint_chain import load_checkpoint, locate_run, publish_checkpoint

__all__ = ["load_checkpoint", "locate_run", "publish_checkpoint"]

warnings.warn(
    "airflow_mysql_cdc.pipeline.checkpoint_chain moved to airflow_mysql_cdc.runs.checkpoint_chain; "
    "change the import in your DAG (the old name will be removed in a later release)",
    DeprecationWarning,
    stacklevel=2,
)
