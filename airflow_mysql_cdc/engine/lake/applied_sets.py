"""Which GTID set one Delta table of a pipeline reflects, read from its own commit history.

Invariant: every commit the sink makes to a target or changelog table records the pipeline position
after it (``airflow_mysql_cdc.applied_gtids``) and a Delta app transaction of the pipeline, so the
newest such commit names what the table holds even when the pipeline's state is behind it (a crash
between a table's commit and the state's). :mod:`.delta_sink` skips exactly those GTIDs on replay.
"""

from __future__ import annotations

from deltalake import DeltaTable

from airflow_mysql_cdc.engine.lake.delta_layout import COMMIT_METADATA_APPLIED
from airflow_mysql_cdc.engine.values.gtid import GtidSet

_HISTORY_SCAN_LIMIT = 200


def applied_by_table(table: DeltaTable, pipeline_app_id: str) -> GtidSet:
    """The applied set recorded by this pipeline's newest commit to ``table`` (empty if none)."""
    if table.transaction_version(pipeline_app_id) is None:
        return GtidSet()
    for commit in table.history(limit=_HISTORY_SCAN_LIMIT):
        if COMMIT_METADATA_APPLIED in commit:
            return GtidSet.parse(commit[COMMIT_METADATA_APPLIED])
    raise RuntimeError(
        f"{table.table_uri} has an app transaction of {pipeline_app_id} but none of its last "
        f"{_HISTORY_SCAN_LIMIT} commits records an applied GTID set; was its history vacuumed?"
    )
