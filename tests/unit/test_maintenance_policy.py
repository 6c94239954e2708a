"""The file size maintenance sets on a table: bounded in bytes and, at the table's bytes per row, in rows."""

from __future__ import annotations

from airflow_mysql_cdc.engine.lake.maintenance.policy import MIB, MaintenancePolicy


def test_narrow_rows_get_files_bounded_by_rows_wide_ones_by_bytes() -> None:
    policy = MaintenancePolicy()  # 16 MiB, 200,000 rows
    assert policy.sized_for(5_000_000, 30 * MIB).target_file_mb == 1  # 6 bytes a row: the 1 MiB floor
    assert policy.sized_for(1_000_000, 100 * MIB).target_file_mb == 16  # 105 bytes a row: 20 MiB wanted
    assert policy.sized_for(1_000_000, 40 * MIB).target_file_mb == 8  # 42 bytes a row: 8 MiB, a power of 2
    assert policy.sized_for(0, 0) == policy  # an empty table keeps the policy's size
