"""The join rule: a table joins the stream only when it would miss nothing and get nothing twice."""

from __future__ import annotations

from airflow_mysql_cdc.engine.apply.admission import consistent_point, join_gap
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.lake_commits import DoneChunk, SnapshotProgress
from airflow_mysql_cdc.engine.values.gtid import GtidSet

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def gtids(text: str) -> GtidSet:
    return GtidSet.parse(f"{U}:{text}")


def test_a_snapshot_taken_after_the_position_joins_as_it_is() -> None:
    gap = join_gap(gtids("1-10"), reflected=gtids("1-12"), high_watermarks=[gtids("1-13"), gtids("1-15")])
    assert gap.closed


def test_a_snapshot_older_than_the_position_misses_what_its_chunks_did_not_see() -> None:
    gap = join_gap(gtids("1-20"), reflected=gtids("1-12"), high_watermarks=[gtids("1-13"), gtids("1-15")])
    assert gap.missing == gtids("14-20")
    assert gap.doubled.is_empty()


def test_a_catch_up_to_the_position_closes_the_gap() -> None:
    gap = join_gap(gtids("1-20"), reflected=gtids("1-20"), high_watermarks=[gtids("1-13"), gtids("1-15")])
    assert gap.closed


def test_a_catch_up_past_the_position_would_apply_transactions_twice() -> None:
    gap = join_gap(gtids("1-20"), reflected=gtids("1-25"), high_watermarks=[gtids("1-13")])
    assert gap.doubled == gtids("21-25")


def _snapshot(*highs: str) -> SnapshotProgress:
    plan = [Chunk(index, None, None) for index in range(len(highs))]
    progress = SnapshotProgress("s", ("id",), plan)
    for chunk, high in zip(plan, highs, strict=True):
        progress.done[chunk.index] = DoneChunk(chunk, gtids("1-3"), gtids(high), 10)
    return progress


def test_every_table_is_exact_only_once_the_position_contains_every_chunks_high_watermark() -> None:
    snapshots = {"d.a": _snapshot("1-5", "1-9", "1-7"), "d.b": _snapshot("1-12"), "d.c": None}
    assert consistent_point(snapshots) == gtids("1-12")
    assert consistent_point({"d.c": None}).is_empty()
