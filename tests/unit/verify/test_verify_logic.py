"""The verification's pure logic: left-out keys, checksums, row diffs, masking, rotation, settings."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_mysql_cdc.engine.mysql.types import ColumnType
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet
from airflow_mysql_cdc.engine.verify.changed_keys import ChangedKeys
from airflow_mysql_cdc.engine.verify.comparable import ChunkChecksum, delta_keys, diff_rows, example
from airflow_mysql_cdc.engine.verify.report import failure_message
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


def test_the_failure_message_names_each_table_what_differs_and_the_repair() -> None:
    report = {
        "position": f"{UUID}:1-10",
        "mismatched": ["db.t", "db.u"],
        "tables": [
            {"table": "db.t", "status": "mismatch", "reason": "", "missing": 1, "extra": 0, "differing": 1,
             "rows_compared": 100, "repair": None,
             "examples": [{"kind": "missing", "key_hash": "h1", "key": {"id": 5}},
                          {"kind": "differing", "key_hash": "h2", "columns": ["v"]}]},
            {"table": "db.u", "status": "mismatch", "reason": "the lake's columns differ from the source's: "
             "v is missing from the lake", "examples": []},
            {"table": "db.ok", "status": "clean", "reason": ""},
        ],
    }  # fmt: skip
    message = failure_message(report)
    assert message.splitlines()[0].startswith(
        f"verify_lake: the lake differs from the source at the pipeline's position {UUID}:1-10 in 2 table(s)."
    )
    found = "- db.t: 1 missing, 0 extra, 1 differing of 100 rows compared; e.g. id=5: missing from the lake; "
    assert found + "key hash=h2: differs in v" in message
    assert (
        "- db.u: the lake's columns differ from the source's: v is missing from the lake. A repair "
        in message
    )
    assert '{"resnapshot": ["db.u"]}' in message and "db.ok" not in message
    assert message.splitlines()[-1].startswith('What to do: set "verify_repair": true in the pipeline JSON')
