"""What the docs say about Spark settings reads the way the code takes it (issue 34 item 4)."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from airflow_mysql_cdc.engine.runtime.spark_tasks import DEFAULT_EXECUTOR_WAIT_S, EXECUTOR_WAIT_CONF
from airflow_mysql_cdc.pipeline.spark_settings import SparkSettings

DOCS = Path(__file__).resolve().parents[2] / "docs"
SPARK_PROPERTIES_TOO = {"conf", "files", "archives"}
"""Keys of the JSON's ``spark`` object whose ``spark.<key>`` is also a real Spark property (or, for
``conf``, the object's own name for its properties): writing them so misleads no one."""


def _docs() -> dict[str, str]:
    return {str(page.relative_to(DOCS)): page.read_text() for page in DOCS.rglob("*.md")}


def test_the_docs_never_write_a_key_of_the_spark_object_as_if_it_were_a_spark_property() -> None:
    """`spark.kubernetes_image` reads like a Spark property; it is the key inside the JSON's `spark`
    object, and Spark ignores a property of that name."""
    keys = [field.name for field in fields(SparkSettings) if field.name not in SPARK_PROPERTIES_TOO]
    pattern = re.compile(rf"\bspark\.({'|'.join(keys)})\b")
    misleading = [
        f"{page}: {match.group(0)}" for page, text in _docs().items() for match in pattern.finditer(text)
    ]
    assert misleading == []


def test_the_deployment_guide_gives_the_executor_wait_its_property_default_and_a_safe_value() -> None:
    deployment = _docs()["deployment.md"]
    assert EXECUTOR_WAIT_CONF in deployment
    assert f"within {DEFAULT_EXECUTOR_WAIT_S:.0f} s" in deployment
    assert "A safe value is at least" in deployment
