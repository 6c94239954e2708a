"""The pipeline's published checkpoint records, kept in the lake: the chain that DAG runs continue.

Invariant: a record, once appended, is never rewritten or removed, and there is at most one per
interval end. A run asks the log where it stands (the Airflow side decides it:
:mod:`airflow_mysql_cdc.runs.run_placement`); a re-run of an interval that already has a record
republishes that record unchanged, so clearing a run never rewrites the chain (issue: ``1-1301 →
1-1301`` became ``1-8862 → 1-8862``) and never loses the rows it applied.

Why the lake and not XCom: XCom values belong to task instances and disappear with them (a cleared
task's XCom is deleted before it runs again; Airflow's clean-up deletes old runs with theirs); a
chain kept there depends on every earlier run staying in the metadata database, and on runs going in
date order. The lake outlives both, and holds the data the records describe. XCom still carries
each run's record, for the UI and for custom DAGs.

Appends do not retry (``max_commit_retries=0``): two runs publishing at once (which the DAG's
``max_active_tis_per_dag=1`` prevents) make one fail with ``CommitFailedError``, and its retry then
finds the other's record; a second record of an interval that still slipped in is never read (the
first one published is the record). Guarded by ``tests/integration/test_checkpoint_log.py`` and, for
the lost commit race, ``test_two_writers_racing_a_commit_on_s3_exactly_one_wins``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass

from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.lake.layout import OWN_TABLE_PROPERTIES, LakeLayout, LakeRoot
from airflow_mysql_cdc.engine.values.checkpoint import CheckpointError, CheckpointRecord, interval_key

_COLUMNS = ("pipeline_id", "segment_end", "run_id", "record", "published_at_us")


class CheckpointLogError(CdcError, RuntimeError):
    """The log cannot take a record: another record for the same interval end is already there."""


@dataclass(frozen=True)
class CheckpointLog:
    """``<lake>/_cdc/checkpoints`` of pipeline ``pipeline_id``."""

    lake_root: LakeRoot
    pipeline_id: str
    storage_options: Mapping[str, str] | None = None

    @property
    def path(self) -> str:
        return LakeLayout(self.lake_root).checkpoints

    def records(self) -> list[CheckpointRecord]:
        """Every record, in interval-end order (empty when nothing was published yet)."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            table = DeltaTable(self.path, storage_options=self._options())
        except TableNotFoundError:
            return []
        rows = table.to_pyarrow_table(columns=list(_COLUMNS)).to_pylist()
        first_by_end: dict[str, dict] = {}
        for row in sorted(rows, key=lambda row: row["published_at_us"]):
            if row["pipeline_id"] != self.pipeline_id:
                raise CheckpointError(
                    f"{self.path} holds checkpoints of pipeline {row['pipeline_id']!r}, not "
                    f"{self.pipeline_id!r}: point this pipeline at its own lake location"
                )
            first_by_end.setdefault(row["segment_end"], row)
        return [
            CheckpointRecord.from_dict(json.loads(row["record"]), pipeline_id=self.pipeline_id)
            for _, row in sorted(first_by_end.items())
        ]

    def append(self, record: CheckpointRecord) -> None:
        """Add ``record``; refused when its interval end already has one (republish that instead)."""
        import pyarrow as pa
        from deltalake import CommitProperties, write_deltalake

        if record.segment_end is None:
            raise CheckpointLogError("a record without a segment end has no place in the checkpoint log")
        key = interval_key(record.segment_end)
        published = {interval_key(r.segment_end) for r in self.records() if r.segment_end}
        if key in published:
            raise CheckpointLogError(
                f"the checkpoint log already holds a record for the interval ending {key}; a re-run "
                "republishes that record instead of writing another"
            )
        row = pa.table(
            {
                "pipeline_id": [self.pipeline_id],
                "segment_end": [key],
                "run_id": [record.run_id],
                "record": [json.dumps(record.to_dict(), sort_keys=True)],
                "published_at_us": [time.time_ns() // 1000],
            }
        )
        write_deltalake(
            self.path,
            row,
            mode="append",
            storage_options=self._options(),
            commit_properties=CommitProperties(max_commit_retries=0),
            configuration=OWN_TABLE_PROPERTIES,
        )

    def _options(self) -> dict[str, str] | None:
        return dict(self.storage_options) if self.storage_options else None
