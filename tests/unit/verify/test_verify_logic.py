"""The verification's pure logic: left-out keys, checksums, row diffs, masking, rotation, settings."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet
from airflow_mysql_cdc.engine.verify.changed_keys import ChangedKeys
from airflow_mysql_cdc.engine.verify.comparable import ChunkChecksum, delta_keys, diff_rows, example
from airflow_mysql_cdc.engine.verify.pending import PendingChunk, as_chunks, still_pending
from airflow_mysql_cdc.engine.verify.report import (
    TableReport,
    VerifyReport,
    failure_message,
    unchecked,
    unchecked_note,
)
from airflow_mysql_cdc.engine.verify.rotation import SampleCursor
from airflow_mysql_cdc.engine.verify.settings import VerifySettings, VerifySettingsError

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def _gtid(number: int) -> Gtid:
    return Gtid.parse(f"{UUID}:{number}")


def test_only_keys_changed_by_transactions_after_the_position_and_within_the_window_are_left_out() -> None:
    changed = ChangedKeys(GtidSet.parse(f"{UUID}:1-10"))
    changed.record(_gtid(5), "db.t", {(1,)})  # inside the position: its change is in the lake
    changed.record(_gtid(11), "db.t", {(2,), (3,)})  # a key-changing update: both keys
    changed.record(_gtid(13), "db.t", {(4,)})  # after the window
    changed.record(_gtid(12), "db.other", {(9,)})
    window = GtidSet.parse(f"{UUID}:1-12")
    assert changed.keys_changed("db.t", window) == {(2,), (3,)}
    assert changed.keys_changed("db.other", window) == {(9,)}
    changed.record_schema_change(_gtid(12), ["db.t"])
    assert changed.schema_changes("db.t", window) == [_gtid(12)]
    assert changed.schema_changes("db.t", GtidSet.parse(f"{UUID}:1-11")) == []


def test_a_keys_row_at_the_position_is_the_image_before_its_first_change_after_it() -> None:
    changed = ChangedKeys(GtidSet.parse(f"{UUID}:1-10"))
    changed.record_images(_gtid(11), "db.t", [((1,), {"id": 1, "v": "at E"}), ((1,), None)])  # an update
    changed.record_images(_gtid(12), "db.t", [((1,), {"id": 1, "v": "after 11"})])  # its later delete
    changed.record_images(_gtid(12), "db.t", [((2,), None)])  # inserted after E: absent there
    changed.record_images(_gtid(13), "db.t", [((3,), {"id": 3, "v": "x"}), ((4,), None)])  # 3 moved to 4
    assert changed.rows_at_position("db.t") == {
        (1,): {"id": 1, "v": "at E"}, (2,): None, (3,): {"id": 3, "v": "x"}, (4,): None,
    }  # fmt: skip
    assert changed.left_out("db.t", GtidSet.parse(f"{UUID}:1-13")) == set()


def test_after_a_change_the_binlog_does_not_describe_a_keys_first_image_proves_nothing() -> None:
    changed = ChangedKeys(GtidSet.parse(f"{UUID}:1-10"))
    changed.record_images(_gtid(11), "db.t", [((1,), {"id": 1})])
    changed.record_statement_change(_gtid(12), ["db.t"])  # which rows it changed is not in the binlog
    changed.record_images(_gtid(13), "db.t", [((2,), {"id": 2})])
    assert changed.rows_at_position("db.t") == {(1,): {"id": 1}}  # before it: still its row at E
    assert changed.statement_changes("db.t", GtidSet.parse(f"{UUID}:1-12")) == [_gtid(12)]
    assert changed.statement_changes("db.t", GtidSet.parse(f"{UUID}:1-11")) == []
    assert changed.left_out("db.t", GtidSet.parse(f"{UUID}:1-13")) == {(2,)}
    assert changed.left_out("db.t", GtidSet.parse(f"{UUID}:1-12")) == set()  # the view did not see 13


def test_chunks_that_differed_or_left_keys_out_are_checked_again_until_clean() -> None:
    checked = [
        (Chunk(0, None, (50,)), True, 0),
        (Chunk(1, (50,), (100,)), False, 3),
        (Chunk(2, (100,), None), False, 0),
        (Chunk(3, None, (50,)), False, 0),  # the same range checked twice (again, then in the plan)
    ]
    pending = still_pending(checked, f"{UUID}:1-10")
    assert pending == (
        PendingChunk(None, (50,), "differed", f"{UUID}:1-10"),
        PendingChunk((50,), (100,), "left_out", f"{UUID}:1-10"),
    )
    assert [PendingChunk.from_json(item.to_json()) for item in pending] == list(pending)
    assert as_chunks(pending, 7) == [Chunk(7, None, (50,)), Chunk(8, (50,), (100,))]
    assert pending[0].describe() == f"(-, 50] differed at {UUID}:1-10"
    assert pending[1].describe() == f"(50, 100] had keys left out at {UUID}:1-10"
    with pytest.raises(ValueError, match="must be differed or left_out"):
        PendingChunk.from_json({"why": "odd", "position": ""})


def test_a_table_not_compared_or_compared_in_part_is_named_as_not_fully_checked() -> None:
    skipped = TableReport("db.s", status="skipped", reason="it left the pipeline: ...")
    partly = TableReport("db.p", rows_compared=55, excluded=771, table_rows=826)
    whole = TableReport("db.w", rows_compared=1200, table_rows=1200)
    assert (skipped.coverage, whole.coverage, partly.low_coverage, whole.low_coverage) == (0, 1, True, False)
    assert partly.describe().startswith("db.p: equal to the source (55 of 826 rows compared (6.6%) in 0/0")
    tables = [skipped, partly, whole]
    assert unchecked(tables) == [
        "db.s not compared (skipped: it left the pipeline: ...)",
        "db.p only 55 of 826 rows compared (6.6%): 771 key(s) changed after the position with their rows "
        "there unknown were left out; their chunks are checked again by the next verification",
    ]
    assert unchecked_note(tables).startswith("; NOT FULLY CHECKED: db.s not compared")
    assert unchecked_note([whole]) == ""


def test_binlog_keys_are_compared_in_the_form_the_rows_carry() -> None:
    unsigned = ColumnType("id", "uint", bits=64)
    assert delta_keys([unsigned], [(2**64 - 1,)]) == {(pa.scalar(2**64 - 1, pa.decimal128(20, 0)).as_py(),)}


def test_the_chunk_checksum_ignores_order_and_counts_a_duplicated_row() -> None:
    rows = pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]})
    assert ChunkChecksum.of(rows) == ChunkChecksum.of(rows.take([2, 0, 1]))
    assert ChunkChecksum.of(rows) != ChunkChecksum.of(rows.take([0, 1, 2, 2]))
    assert ChunkChecksum.of(rows.take([0, 0])) != ChunkChecksum.of(rows.take([0])).of(
        pa.table({"id": [], "v": []})
    )
    assert str(ChunkChecksum.of(rows)).startswith("3:")


def test_a_diff_names_missing_extra_and_differing_keys_with_their_columns() -> None:
    source = pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "w": [1, 2, 3]})
    lake = pa.table({"id": [1, 3, 4], "v": ["a", "x", "d"], "w": [1, 3, 4]})
    diff = diff_rows(source, lake, ["id"])
    assert (diff.missing, diff.extra, diff.differing) == ([(2,)], [(4,)], {(3,): ("v",)})


def test_a_key_the_lake_holds_twice_is_a_difference() -> None:
    source = pa.table({"id": [1], "v": ["a"]})
    diff = diff_rows(source, pa.table({"id": [1, 1], "v": ["a", "a"]}), ["id"])
    assert diff.differing == {(1,): ("*",)}


def test_masked_examples_show_no_value_of_the_key_or_the_columns() -> None:
    source = pa.table({"email": ["a@example.com"], "v": ["secret-1"]})
    lake = pa.table({"email": ["a@example.com"], "v": ["secret-2"]})
    diff = diff_rows(source, lake, ["email"])
    (row_key,) = diff.differing
    masked = example("differing", row_key, ["email"], diff, mask_values=True)
    assert set(masked) == {"kind", "key_hash", "columns"} and masked["columns"] == ["v"]
    assert "example.com" not in str(masked) and "secret" not in str(masked)
    shown = example("differing", row_key, ["email"], diff, mask_values=False)
    assert shown["source"] == {"v": "secret-1"} and shown["lake"] == {"v": "secret-2"}


def test_sampled_rotation_goes_on_where_the_last_run_stopped_and_wraps() -> None:
    cursor = SampleCursor()
    cursor = cursor.advanced([Chunk(0, None, (50,)), Chunk(1, (50,), (100,))])
    assert cursor == SampleCursor((100,), 0)
    cursor = cursor.advanced([Chunk(0, (100,), None)])
    assert cursor == SampleCursor(None, 1)
    assert SampleCursor.from_json(SampleCursor((b"\x01", "x"), 3).to_json()) == SampleCursor(
        (b"\x01", "x"), 3
    )
    assert cursor.advanced([]) == cursor


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"mode": "always"}, "verify must be one of off, sample, full, not 'always'"),
        ({"sample_chunks": 0}, "verify_sample_chunks must be an integer of at least 1, not 0"),
        ({"repair": "yes"}, "verify_repair must be true or false, not 'yes'"),
        ({"colour": 1}, "unknown verify settings: colour"),
    ],
)
def test_wrong_settings_are_refused_naming_the_key(settings: dict, message: str) -> None:
    with pytest.raises(VerifySettingsError, match=message):
        VerifySettings.from_dict(settings)


def test_the_failure_message_names_each_table_what_differs_and_the_way_out_in_the_engines_words() -> None:
    examples = [
        {"kind": "missing", "key_hash": "h1", "key": {"id": 5}},
        {"kind": "differing", "key_hash": "h2", "columns": ["v"]},
    ]
    report = VerifyReport("shop", "full", f"{UUID}:1-10", tables=[
        TableReport("db.t", "mismatch", missing=1, differing=1, rows_compared=100, examples=examples),
        TableReport("db.u", "mismatch", reason="the lake's columns differ from the source's: v is missing "
                    "from the lake"),
        TableReport("db.ok", rows_compared=10),
    ])  # fmt: skip
    lines = failure_message(report)
    assert lines[0].startswith(
        f"the lake differs from the source at the pipeline's position {UUID}:1-10 in 2 table(s)."
    )
    found = "- db.t: 1 missing, 0 extra, 1 differing of 100 rows compared; e.g. id=5: missing from the lake; "
    assert lines[1] == found + "key hash=h2: differs in v"
    assert lines[2] == (
        "- db.u: the lake's columns differ from the source's: v is missing from the lake. A repair cannot "
        "fix columns: re-snapshot the table."
    )
    assert lines[-1].startswith("What to do: verify again with repair on")
    assert not any(word in line for line in lines for word in ("DAG", "clear", "db.ok"))  # engine words


def test_a_report_read_back_from_its_result_is_the_report() -> None:
    table = TableReport("db.t", "mismatch", missing=2, rows_compared=40, excluded=3, table_rows=90,
                        examples=[{"kind": "missing", "key_hash": "h"}], repair={"outcome": "x"})  # fmt: skip
    report = VerifyReport("shop", "sample", f"{UUID}:1-10", tables=[table, TableReport("db.s", "skipped")])
    again = VerifyReport.from_dict(report.to_dict())
    assert again == report and again.mismatched == [table]


def test_a_verify_log_written_before_the_pending_column_gains_it_at_its_next_write(tmp_path) -> None:
    """A lake verified by the version before pending chunks: its rows read as nothing pending, and
    the next verification's write adds the column (a schema merge), keeping the other tables' rows."""
    import json

    from deltalake import write_deltalake

    from airflow_mysql_cdc.engine.verify.verify_log import VerifyLog, VerifyRecord

    path = str(tmp_path / "_cdc" / "verify")
    old = {"pipeline_id": ["p"], "table": ["db.old"], "cursor": [json.dumps({"after": [5], "passes": 2})],
           "position": [f"{UUID}:1-3"], "verified_at_us": [1], "mode": ["sample"], "status": ["clean"],
           "summary": ["{}"]}  # fmt: skip
    write_deltalake(path, pa.table(old))
    log = VerifyLog(path, "p")
    assert log.records()["db.old"].pending == () and log.records()["db.old"].cursor == SampleCursor((5,), 2)
    pending = (PendingChunk((5,), (9,), "differed", f"{UUID}:1-4"),)
    log.write(
        {
            "db.new": VerifyRecord(
                "db.new", SampleCursor(), f"{UUID}:1-4", 2, "sample", "mismatch", {}, pending
            )
        }
    )
    records = VerifyLog(path, "p").records()
    assert records["db.new"].pending == pending and records["db.old"].cursor == SampleCursor((5,), 2)
