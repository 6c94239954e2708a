"""Verifying the lake at the pipeline's position against the live source: real MySQL, real Delta.

Each test builds an exact lake the way the pipeline does (a snapshot, then the binlog application
up to a position ``E``), keeps writers running on the source, and verifies; what the verification
may and may not say is in ``engine/verify/table_check.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.apply.single_reader import run_apply
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.snapshot.runner import snapshot_table
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.verify.report import VerifyReport, failure_message
from airflow_mysql_cdc.engine.verify.run import verify_lake
from airflow_mysql_cdc.engine.verify.settings import VerifySettings
from airflow_mysql_cdc.engine.verify.table_check import SourceBehindError
from tests.support.lake import assert_lake_equals_source
from tests.support.mysql import execute
from tests.support.pipeline import seed, writers_running

pytestmark = pytest.mark.mysql
PIPELINE = "verified"


def _stream(endpoint: MySqlEndpoint, lake: Path, tables: tuple[str, ...], start: GtidSet) -> GtidSet:
    return run_apply(
        ApplyConfig(
            pipeline_id=PIPELINE, lake_root=str(lake), tables=tables, start_gtids=start,
            mode="until_caught_up", batch_max_rows=200, batch_max_seconds=0.2, heartbeat_s=0.5,
        ),
        endpoint,
    ).end_gtids  # fmt: skip


def _exact_lake(
    endpoint: MySqlEndpoint, lake: Path, rows: int = 300, *, quiet: bool = False
) -> tuple[str, GtidSet]:
    """``orders`` seeded with ``rows`` rows, snapshotted and streamed: the lake exact at the position.

    ``quiet`` adds keys 1001-1060, which the tests' writers never touch (theirs are 1-600).
    """
    seed(endpoint, "orders", rows)
    if quiet:
        values = ", ".join(f"({i}, 'c{i}', {i}.5, 'new', NULL, NOW(6))" for i in range(1001, 1061))
        execute(endpoint, f"INSERT INTO orders VALUES {values}")
    table = f"{endpoint.database}.orders"
    snapshot = snapshot_table(endpoint, lake, table, chunk_size=40)
    return table, _stream(endpoint, lake, (table,), snapshot.stream_start)


def _verify(endpoint: MySqlEndpoint, lake: Path, table: str, **settings) -> VerifyReport:
    chosen = {"mode": "full", "chunk_size": 50} | settings
    return verify_lake(LakeState(lake, PIPELINE), endpoint, [table], VerifySettings(**chosen))


def _target(lake: Path, database: str) -> DeltaTable:
    return DeltaTable(LakeLayout(lake).target(database, "orders"))


def _corrupt(lake: Path, database: str) -> None:
    """What another job might do to a target: change a value, delete a row, add a row."""
    target = _target(lake, database)
    target.update(predicate="id = 1007", updates={"amount": "cast(999.99 as decimal(10,2))"})
    target.delete("id = 1011")
    rows = target.to_pyarrow_table()
    extra = rows.filter(pc.equal(rows.column("id"), 1013))
    extra = extra.set_column(extra.schema.get_field_index("id"), "id", pa.array([100_013], pa.int32()))
    write_deltalake(target, extra, mode="append")


def test_verify_with_writers_running_never_reports_a_difference(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    """Writers on every key during each full verification: no difference is claimed, and no key is
    left out: a key changed after the position is compared with the binlog's image of its row there
    (before, a hot table was compared "55 of 826 rows", issue 33). The lake is read whole each time."""
    table, position = _exact_lake(mysql_database, tmp_path)
    through_binlog = compared = 0
    with writers_running(mysql_database, 71, "orders", pause_s=0.01):
        for _ in range(12):
            position = _stream(mysql_database, tmp_path, (table,), position)
            report = _verify(mysql_database, tmp_path, table)  # the writers go on during it
            (result,) = report.tables
            assert result.status == "clean", result.describe()
            assert report.position == str(position)
            assert (result.excluded, result.coverage, result.pending) == (0, 1.0, 0), result.describe()
            assert result.table_rows == result.rows_compared  # a full verification: the whole table
            through_binlog, compared = through_binlog + result.from_binlog, compared + result.rows_compared
    assert compared > 12 * 50
    assert through_binlog > 0  # keys changed after the position were there, and were compared


def test_a_corrupted_lake_is_found_repaired_and_then_clean_while_writers_run(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    database = mysql_database.database
    table, position = _exact_lake(mysql_database, tmp_path, quiet=True)
    _corrupt(tmp_path, database)
    with writers_running(mysql_database, 72, "orders", pause_s=0.01):
        found = _verify(mysql_database, tmp_path, table)
        (result,) = found.tables
        assert (result.status, result.missing, result.extra, result.differing) == ("mismatch", 1, 1, 1)
        by_kind = {shown["kind"]: shown for shown in result.examples}
        assert by_kind["differing"]["key"] == {"id": 1007} and by_kind["differing"]["columns"] == ["amount"]
        assert by_kind["differing"]["lake"] == {"amount": "999.99"}
        assert by_kind["missing"]["key"] == {"id": 1011} and by_kind["extra"]["key"] == {"id": 100013}
        message = "\n".join(failure_message(found))
        assert (
            f"the lake differs from the source at the pipeline's position {position} in 1 table(s)" in message
        )
        assert f"- {table}: 1 missing, 1 extra, 1 differing of" in message
        shown = (
            "id=1011: missing from the lake",
            "id=100013: extra in the lake",
            "id=1007: differs in amount",
        )
        assert all(part in message for part in shown)
        assert "verify again with repair on" in message

        repaired = _verify(mysql_database, tmp_path, table, repair=True)
        (result,) = repaired.tables
        assert result.status == "repaired" and result.repair is not None, (result.repair, result.examples)
        assert (result.repair["upserted"], result.repair["deleted"]) == (2, 1)
        assert result.repair["outcome"] == "equal to the source"
        assert _verify(mysql_database, tmp_path, table).tables[0].status == "clean"
        # The next run is not fenced by the repair's commit: it is the pipeline's own, under its lease.
        position = _stream(mysql_database, tmp_path, (table,), position)
    _stream(mysql_database, tmp_path, (table,), position)
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")


def test_masked_examples_name_keys_by_hash_and_columns_by_name_only(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    table, _ = _exact_lake(mysql_database, tmp_path, rows=120)
    _target(tmp_path, mysql_database.database).update(predicate="id = 7", updates={"customer": "'leaked'"})
    (result,) = _verify(mysql_database, tmp_path, table, mask_values=True).tables
    (shown,) = result.examples
    assert shown == {"kind": "differing", "key_hash": shown["key_hash"], "columns": ["customer"]}
    message = "\n".join(failure_message(_verify(mysql_database, tmp_path, table, mask_values=True)))
    # Neither value shows ("c7": the source's; as a word, since a key hash may hold those letters).
    assert "leaked" not in message and not re.search(r"\bc7\b", message)
    assert f"key hash={shown['key_hash']}" in message


def test_sampled_verify_runs_cover_the_key_space_in_rotation(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    table, _ = _exact_lake(mysql_database, tmp_path)
    _target(tmp_path, mysql_database.database).update(predicate="id = 230", updates={"status": "'shipped'"})
    ranges, again, statuses = [], [], []
    for _ in range(5):
        (result,) = _verify(mysql_database, tmp_path, table, mode="sample", sample_chunks=2).tables
        ranges.append([(chunk.lower, chunk.upper) for chunk in result.chunks if not chunk.again])
        again.append([(chunk.lower, chunk.upper) for chunk in result.chunks if chunk.again])
        statuses.append(result.status)
        assert result.table_rows == 300 and result.coverage == 1.0
    # 300 keys in chunks of 50: (-,50], (50,100] | (100,150], (150,200] | (200,250], (250,300] | (300,-)
    assert [[bounds for bounds in run] for run in ranges[:4]] == [
        [(None, [50]), ([50], [100])],
        [([100], [150]), ([150], [200])],
        [([200], [250]), ([250], [300])],
        [([300], None)],
    ]
    assert ranges[4] == ranges[0]  # the next pass starts again at the first key
    # id 230 is in the third range; the chunk that proved it is checked again first until it is repaired
    assert statuses == ["clean", "clean", "mismatch", "mismatch", "mismatch"]
    assert again == [[], [], [], [([200], [250])], [([200], [250])]]
    log = DeltaTable(LakeLayout(tmp_path).verify_log)
    assert len(log.file_uris()) == 1  # one row per table, overwritten: bounded however many runs
    (row,) = log.to_pyarrow_table().to_pylist()
    assert row["table"] == table and '"passes": 1' in row["cursor"]
    assert '"why": "differed"' in row["pending"] and '"upper": [250]' in row["pending"]


def test_a_source_that_lacks_the_position_is_refused_naming_what_it_lacks(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    table, position = _exact_lake(mysql_database, tmp_path, rows=40)
    elsewhere = GtidSet.parse("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")
    store = LakeState(tmp_path, PIPELINE).pipeline_store()
    state = store.claim("test", position)
    store.commit(state, position | elsewhere, state.batch_seq, release=True)
    with pytest.raises(SourceBehindError) as raised:
        _verify(mysql_database, tmp_path, table)
    assert str(raised.value).startswith(
        "the source has not executed the pipeline's position: it lacks "
        "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5."
    )
    assert "verify against the server the pipeline reads" in str(raised.value)
    assert LakeState(tmp_path, PIPELINE).pipeline().owner == ""  # the lease was released


def test_a_failed_sample_verify_cleared_with_repair_repairs_the_keys_it_proved(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    """The failed try proves a row in its sample and fails; the cleared try (the same settings with
    ``repair``, at the same position) checks that chunk again first, repairs the row and is green,
    though its cursor moved on. Before the pending list it verified the next chunks and went green."""
    database = mysql_database.database
    table, position = _exact_lake(mysql_database, tmp_path)
    _target(tmp_path, database).update(predicate="id = 30", updates={"customer": "'tampered'"})
    with writers_running(mysql_database, 74, "orders", pause_s=0.01):  # id 30 too: compared all the same
        failed = _verify(mysql_database, tmp_path, table, mode="sample", sample_chunks=1)
        (result,) = failed.tables
        assert (result.status, result.differing) == ("mismatch", 1), result.describe()
        assert result.examples[0]["key"] == {"id": 30} and result.examples[0]["columns"] == ["customer"]
        assert "checks again first exactly the chunks this verification proved different" in "\n".join(
            failure_message(failed)
        )
        cleared = _verify(mysql_database, tmp_path, table, mode="sample", sample_chunks=1, repair=True)
        (result,) = cleared.tables
        assert cleared.position == failed.position == str(position)
        assert result.status == "repaired", result.describe()
        assert result.repair is not None and result.repair["upserted"] == 1
        assert result.rechecked == 1 and result.chunks[0].again.startswith("(-, 50] differed at ")
        assert [chunk.lower for chunk in result.chunks[1:]] == [[50]]  # the sample moved on
        later = _verify(mysql_database, tmp_path, table, mode="sample", sample_chunks=1)
        assert later.tables[0].status == "clean" and later.tables[0].rechecked == 0
        position = _stream(mysql_database, tmp_path, (table,), position)
    _stream(mysql_database, tmp_path, (table,), position)
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")


def test_a_key_held_twice_in_a_target_fails_verify_naming_it(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    """A second live row for a key, written with deltalake (what issue 33's MERGE did): ``full`` and a
    one-chunk ``sample`` far from that key both fail naming it; a repair leaves one row, the source's."""
    database = mysql_database.database
    table, position = _exact_lake(mysql_database, tmp_path, quiet=True)
    target = _target(tmp_path, database)
    rows = target.to_pyarrow_table()
    copy = rows.filter(pc.equal(rows.column("id"), 1017))
    write_deltalake(target, copy, mode="append")
    with writers_running(mysql_database, 75, "orders", pause_s=0.01):
        for settings in ({"mode": "full"}, {"mode": "sample", "sample_chunks": 1}):
            found = _verify(mysql_database, tmp_path, table, **settings)
            (result,) = found.tables
            assert (result.status, result.duplicated, result.differing) == ("mismatch", 1, 0), settings
            (shown,) = result.examples
            assert (shown["kind"], shown["rows"], shown["key"]) == ("duplicated", 2, {"id": 1017})
            message = "\n".join(failure_message(found))
            assert f"- {table}: 0 missing, 0 extra, 0 differing, 1 key(s) held twice in the lake" in message
            assert "e.g. id=1017: held 2 times in the lake" in message
        repaired = _verify(mysql_database, tmp_path, table, mode="sample", sample_chunks=1, repair=True)
        (result,) = repaired.tables
        assert result.status == "repaired" and result.repair is not None, result.describe()
        assert result.repair["outcome"] == "equal to the source"
        assert _verify(mysql_database, tmp_path, table).tables[0].status == "clean"
        position = _stream(mysql_database, tmp_path, (table,), position)
    _stream(mysql_database, tmp_path, (table,), position)
    assert_lake_equals_source(mysql_database, tmp_path, database, "orders")


def test_a_statement_logged_change_after_the_position_leaves_the_table_inconclusive(
    mysql_database: MySqlEndpoint, tmp_path: Path
) -> None:
    """Which rows a statement-logged change touched is not in the binlog: a verification meeting one
    after the position says the table is inconclusive (not compared, named in the summary), never
    fails with the binlog application's "cannot be applied from the checkpoint" (issue 33)."""
    table, _ = _exact_lake(mysql_database, tmp_path, rows=120)
    [(gtid,)] = execute(
        mysql_database,
        "SET SESSION binlog_format = 'STATEMENT'",
        "BEGIN",
        "UPDATE orders SET amount = amount + 1 WHERE id <= 40",
        "COMMIT",
        "SELECT GTID FROM performance_schema.events_transactions_current"
        " WHERE THREAD_ID = PS_CURRENT_THREAD_ID()",
    )
    for mode in ("full", "sample"):
        report = _verify(mysql_database, tmp_path, table, mode=mode)
        (result,) = report.tables
        assert result.status == "inconclusive" and result.coverage == 0.0
        assert result.reason.startswith(f"a statement-logged change after the position changed it ({gtid})")
        assert report.mismatched == []
        assert (
            f"NOT FULLY CHECKED: {table} not compared (inconclusive: a statement-logged" in report.summary()
        )
