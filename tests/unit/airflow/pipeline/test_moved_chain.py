"""A custom DAG written for 0.1 still imports the chain from its old place, and is told where it went."""

from __future__ import annotations

import importlib
import sys

import pytest

from airflow_mysql_cdc.runs import checkpoint_chain


def test_the_old_import_of_the_chain_works_and_names_the_new_one() -> None:
    sys.modules.pop("airflow_mysql_cdc.pipeline.checkpoint_chain", None)
    with pytest.warns(DeprecationWarning, match="moved to airflow_mysql_cdc.runs.checkpoint_chain"):
        old = importlib.import_module("airflow_mysql_cdc.pipeline.checkpoint_chain")
    assert old.publish_checkpoint is checkpoint_chain.publish_checkpoint
    assert old.load_checkpoint is checkpoint_chain.load_checkpoint
