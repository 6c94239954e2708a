"""Snapshot records are typed at the snapshot log's edge, and their JSON is what every version wrote:
rows already in users' lakes read back, and rows written now read in the version before."""

from __future__ import annotations

import json

import pytest

from airflow_mysql_cdc.engine.lake.state.snapshot_records import (
    ChunkBounds,
    ChunkDone,
    NoSnapshot,
    SnapshotRecordError,
    SnapshotStart,
    record_from_json,
)
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.lake_commits import chunk_bounds, progress_from_records
from airflow_mysql_cdc.engine.values.gtid import GtidSet

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
# Rows' ``record`` column as this package wrote them before the records were typed.
START_WITHOUT_DEFINITION = {
    "id": "s1", "phase": "start", "key": ["id"],
    "plan": [{"index": 0, "lower": None, "upper": [50]}, {"index": 1, "lower": [50], "upper": None}],
}  # fmt: skip
CHUNK = {
    "id": "s1", "phase": "chunk", "chunk": {"index": 1, "lower": [50], "upper": None},
    "low": f"{UUID}:1-10", "high": f"{UUID}:1-12", "rows": 7,
}  # fmt: skip
NONE = {"phase": "none"}
DEFINITION = {
    "columns": [{"name": "id", "mysql_type": "int", "unsigned": False, "nullable": False}],
    "key": ["id"],
    "declared": [["id", "int", False, None, None]],
}


@pytest.mark.parametrize(
    "recorded",
    [
        START_WITHOUT_DEFINITION,
        START_WITHOUT_DEFINITION | {"definition": DEFINITION},
        CHUNK,
        NONE,
    ],
    ids=["start of an older version", "start", "chunk", "no snapshot"],
)
def test_a_recorded_row_reads_typed_and_writes_back_the_same_json(recorded: dict) -> None:
    record = record_from_json(json.loads(json.dumps(recorded, sort_keys=True)))
    assert json.dumps(record.to_json(), sort_keys=True) == json.dumps(recorded, sort_keys=True)
    assert record_from_json(record.to_json()) == record


def test_records_carry_their_phase_as_a_type_and_their_watermarks_as_gtid_sets() -> None:
    chunk = record_from_json(CHUNK)
    assert isinstance(chunk, ChunkDone) and chunk.snapshot_id == "s1" and chunk.rows == 7
    assert chunk.high_watermark == GtidSet.parse(f"{UUID}:1-12")
    start = record_from_json(START_WITHOUT_DEFINITION)
    assert isinstance(start, SnapshotStart) and start.key == ("id",) and start.table_definition() is None
    assert start.plan[0] == ChunkBounds(0, None, [50])
    assert record_from_json({}) == NoSnapshot() and NoSnapshot().snapshot_id == ""


def test_a_phase_this_version_does_not_know_is_refused_with_the_way_out() -> None:
    with pytest.raises(SnapshotRecordError, match="phase 'merge'.*a newer version wrote this lake"):
        record_from_json({"id": "s1", "phase": "merge"})


def test_progress_reads_the_latest_start_and_the_first_record_of_each_chunk() -> None:
    newer = CHUNK | {"rows": 9}
    other_snapshot = CHUNK | {"id": "s0", "chunk": {"index": 0, "lower": None, "upper": [50]}}
    records = [record_from_json(data) for data in (newer, CHUNK, other_snapshot, START_WITHOUT_DEFINITION)]
    progress = progress_from_records(records)
    assert progress is not None and progress.snapshot_id == "s1" and progress.key == ("id",)
    assert [chunk.index for chunk in progress.pending] == [0]
    assert progress.done[1].rows == 9 and progress.stream_start == GtidSet.parse(f"{UUID}:1-10")
    assert progress_from_records([record_from_json(CHUNK)]) is None


def test_chunk_bounds_keep_the_keys_exact_json() -> None:
    chunk = Chunk(3, (1, "a"), (2, "b"))
    assert chunk_bounds(chunk).to_json() == {"index": 3, "lower": [1, "a"], "upper": [2, "b"]}


def test_a_definition_that_does_not_read_back_fails_only_the_reader_that_asks_for_it() -> None:
    """Maintenance and the status read a start's key and id; only a resume needs its definition."""
    unreadable = {"columns": [], "key": [], "declared": [["id", "int", False, None, None]]}
    start = record_from_json(START_WITHOUT_DEFINITION | {"definition": unreadable})
    assert isinstance(start, SnapshotStart) and start.key == ("id",)
    with pytest.raises(ValueError, match="declares 1 of 0 columns"):
        start.table_definition()
