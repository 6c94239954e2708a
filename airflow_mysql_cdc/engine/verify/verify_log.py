"""The lake's record of verifications: per table, the latest result, where sampling goes on, and
what to check again first.

Invariant: what the next verification needs (each table's :class:`~.rotation.SampleCursor` and its
:class:`~.pending.PendingChunk` list) is a row of the ``_cdc/verify`` Delta table, read as data,
never from commit history (which log clean-up deletes). The table holds one row per verified
table and every verification overwrites it whole in one commit, so it stays one small file however
many runs there were (maintenance vacuums the replaced ones, checkpoints and log clean-up bound its
log: ``OWN_TABLE_PROPERTIES``). It is written only under the pipeline's lease, so two verifications
never interleave. A log written before the ``pending`` column existed gains it at its next write (a
schema merge); its rows read as having nothing pending.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import TableNotFoundError

from airflow_mysql_cdc.engine.lake.layout import OWN_TABLE_PROPERTIES
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.engine.verify.pending import PendingChunk
from airflow_mysql_cdc.engine.verify.rotation import SampleCursor

_SCHEMA = pa.schema(
    [
        pa.field("pipeline_id", pa.string()),
        pa.field("table", pa.string()),
        pa.field("cursor", pa.string()),
        pa.field("position", pa.string()),
        pa.field("verified_at_us", pa.int64()),
        pa.field("mode", pa.string()),
        pa.field("status", pa.string()),
        pa.field("summary", pa.string()),
        pa.field("pending", pa.string()),
    ]
)


@dataclass(frozen=True)
class VerifyRecord:
    """One table's latest verification."""

    table: str
    cursor: SampleCursor
    position: str
    verified_at_us: int
    mode: str
    status: str
    summary: JsonObject
    pending: tuple[PendingChunk, ...] = ()
    """Chunks the next verification checks again first (:mod:`.pending`)."""


class VerifyLog:
    def __init__(self, path: str, pipeline_id: str, storage_options: dict[str, str] | None = None) -> None:
        self.path = path
        self.pipeline_id = pipeline_id
        self.storage_options = storage_options

    def records(self) -> dict[str, VerifyRecord]:
        try:
            table = DeltaTable(self.path, storage_options=self.storage_options)
        except TableNotFoundError:
            return {}
        records = {}
        for row in table.to_pyarrow_table().to_pylist():
            if row["pipeline_id"] != self.pipeline_id:
                continue
            records[row["table"]] = VerifyRecord(
                table=row["table"],
                cursor=SampleCursor.from_json(json.loads(row["cursor"]) if row["cursor"] else None),
                position=row["position"],
                verified_at_us=row["verified_at_us"],
                mode=row["mode"],
                status=row["status"],
                summary=json.loads(row["summary"]) if row["summary"] else {},
                pending=tuple(
                    PendingChunk.from_json(item) for item in json.loads(row.get("pending") or "[]")
                ),
            )
        return records

    def write(self, updated: Mapping[str, VerifyRecord]) -> None:
        """Keep every other table's record, replace those of ``updated``: one overwrite."""
        records = {**self.records(), **updated}
        rows = pa.table(
            {
                "pipeline_id": [self.pipeline_id] * len(records),
                "table": [record.table for record in records.values()],
                "cursor": [json.dumps(record.cursor.to_json()) for record in records.values()],
                "position": [record.position for record in records.values()],
                "verified_at_us": [record.verified_at_us for record in records.values()],
                "mode": [record.mode for record in records.values()],
                "status": [record.status for record in records.values()],
                "summary": [json.dumps(record.summary, sort_keys=True) for record in records.values()],
                "pending": [
                    json.dumps([item.to_json() for item in record.pending]) for record in records.values()
                ],
            },
            schema=_SCHEMA,
        )
        try:
            table: DeltaTable | str = DeltaTable(self.path, storage_options=self.storage_options)
        except TableNotFoundError:
            table = self.path
        write_deltalake(
            table,
            rows,
            mode="overwrite",
            storage_options=self.storage_options if isinstance(table, str) else None,
            configuration=OWN_TABLE_PROPERTIES if isinstance(table, str) else None,
            schema_mode="merge",  # a log written before the pending column gains it
            commit_properties=CommitProperties(custom_metadata={"airflow_mysql_cdc.action": "verify"}),
        )
