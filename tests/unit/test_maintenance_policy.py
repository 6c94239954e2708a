"""The file size maintenance sets on a table (bounded in bytes and, at the table's bytes per row, in
rows), and the bounds of the maintenance settings as a user meets and reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.lake.maintenance.policy import MIB, MaintenancePolicy
from airflow_mysql_cdc.pipeline.config import PipelineConfig, PipelineConfigError


def test_narrow_rows_get_files_bounded_by_rows_wide_ones_by_bytes() -> None:
    policy = MaintenancePolicy()  # 16 MiB, 200,000 rows
    assert policy.sized_for(5_000_000, 30 * MIB).target_file_mb == 1  # 6 bytes a row: the 1 MiB floor
    assert policy.sized_for(1_000_000, 100 * MIB).target_file_mb == 16  # 105 bytes a row: 20 MiB wanted
    assert policy.sized_for(1_000_000, 40 * MIB).target_file_mb == 8  # 42 bytes a row: 8 MiB, a power of 2
    assert policy.sized_for(0, 0) == policy  # an empty table keeps the policy's size


DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


@pytest.mark.parametrize(
    ("key", "refused", "bound"),
    [
        ("interval_hours", -1, "0 or more"),
        ("small_files", 1, "at least 2"),
        ("target_file_mb", 0, "between 1 and 4096"),
        ("max_file_rows", 999, "at least 1000"),
        ("vacuum_retention_hours", 0.5, "at least 1"),
    ],
)
def test_each_maintenance_bound_refused_at_dag_parse_is_stated_in_configuration_md(
    key: str, refused: float, bound: str
) -> None:
    """A user met ``vacuum_retention_hours must be at least 1`` when the DAG was parsed, which
    configuration.md did not say (issue 34): every bound the policy enforces is in the key's row."""
    with pytest.raises(PipelineConfigError, match=rf"maintenance\.{key} must be {bound}"):
        PipelineConfig(dag_id="bounds", maintenance={key: refused})
    (row,) = [line for line in DOCS.read_text().splitlines() if line.startswith(f"| `{key}` |")]
    assert bound in row
