"""The how-to guides' example DAGs (docs/examples/howto/) parse as shipped, with the operators they show.

Each guide in docs/how-to/ shows its example from these files, so an example that stops importing,
or passes a parameter an operator no longer takes, fails here rather than in a reader's Airflow.
Parsing is the check (no MySQL, Spark or lake): the operators validate their arguments when built.
The provider info lists the guides, and every listed page exists.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow.dag_processing.dagbag import DagBag

from airflow_mysql_cdc.get_provider_info import get_provider_info

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples" / "howto"

EXPECTED = {
    "mysql_cdc_howto_prerequisites": {"check_prerequisites": "MySqlCdcPrerequisitesOperator"},
    "mysql_cdc_howto_snapshot": {
        "snapshot": "MySqlCdcSnapshotOperator",
        "catch_up": "MySqlCdcBinlogApplyOperator",
    },
    "mysql_cdc_howto_binlog_apply": {"apply": "MySqlCdcBinlogApplyOperator"},
    "mysql_cdc_howto_replicate": {
        "load_checkpoint": "_PythonDecoratedOperator",
        "resumability": "MySqlCdcResumabilitySensor",
        "replicate": "MySqlCdcReplicateOperator",
    },
    "mysql_cdc_howto_lake_maintenance": {"maintain_lake": "MySqlCdcLakeMaintenanceOperator"},
    "mysql_cdc_howto_verify": {"verify_lake": "MySqlCdcVerifyOperator"},
    "mysql_cdc_howto_gtid_sensors": {
        "primary_position": "_PythonDecoratedOperator",
        "replica_caught_up": "MySqlGtidReachedSensor",
        "resumability": "MySqlCdcResumabilitySensor",
    },
}


@pytest.fixture(scope="module")
def dagbag(airflow_db: None) -> DagBag:
    """The examples' DAGs; get_dag reads the metadata database, so this test needs one of its own
    (it passed in the suite only when an earlier test on its worker had migrated one)."""
    return DagBag(dag_folder=str(EXAMPLES))


def test_every_howto_example_parses_without_an_import_error(dagbag: DagBag) -> None:
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == set(EXPECTED)


@pytest.mark.parametrize("dag_id", sorted(EXPECTED))
def test_each_example_builds_the_operators_its_guide_describes(dagbag: DagBag, dag_id: str) -> None:
    dag = dagbag.get_dag(dag_id)
    assert {task.task_id: type(task).__name__ for task in dag.tasks} == EXPECTED[dag_id]


def test_every_example_file_is_shown_by_a_guide() -> None:
    guides = "".join(page.read_text() for page in (ROOT / "docs" / "how-to").glob("*.md"))
    for example in EXAMPLES.glob("*.py"):
        assert f"examples/howto/{example.name}" in guides, example.name


def test_the_provider_info_lists_every_guide_and_each_listed_page_exists() -> None:
    listed = [page for entry in get_provider_info()["integrations"] for page in entry.get("how-to-guide", [])]
    assert listed, "no how-to-guide entries"
    for page in listed:
        assert (ROOT / page.lstrip("/")).is_file(), page
    assert {Path(page).name for page in listed} == {
        page.name for page in (ROOT / "docs" / "how-to").glob("*.md")
    }


def test_every_relative_link_of_the_guides_points_at_a_file_that_exists() -> None:
    import re

    pages = [
        *(ROOT / "docs" / "how-to").glob("*.md"),
        ROOT / "docs" / "README.md",
        ROOT / "docs" / "connection-form.md",
    ]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []
