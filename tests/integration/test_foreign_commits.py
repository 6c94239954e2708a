"""Other writers on real delta-rs tables: which commits are data-neutral, which tables we may write."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Field, QueryBuilder, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError
from deltalake.table import ProtocolVersions, TableFeatures

from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.lake.foreign_commits import (
    ForeignCommit,
    TableVersionBehindError,
    UnsupportedTableFeatureError,
    check_writable,
    commits_since,
    rearranged_only,
)


def _rows(start: int, stop: int) -> pa.Table:
    ids = list(range(start, stop))
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([str(i) for i in ids])})


def _table(tmp_path: Path, files: int = 3) -> str:
    """A table of ``files`` appends (one file each), so a compaction has something to rearrange."""
    path = str(tmp_path / "orders")
    for i in range(files):
        write_deltalake(path, _rows(i * 10, i * 10 + 10), mode="append")
    return path


def _upsert(table: DeltaTable, retries: int | None = 0) -> None:
    properties = CommitProperties(max_commit_retries=retries) if retries is not None else None
    source = pa.table({"id": pa.array([1, 2, 99], pa.int64()), "v": ["one", "DEL", "new"]})
    merger = table.merge(
        source, "t.id = s.id", source_alias="s", target_alias="t", commit_properties=properties
    )
    merger.when_matched_update({"v": "s.v"}, predicate="s.v <> 'DEL'").when_matched_delete(
        predicate="s.v = 'DEL'"
    ).when_not_matched_insert_all().execute()


def _contents(path: str) -> list[tuple[int, str]]:
    data = pa.table(QueryBuilder().register("t", DeltaTable(path)).execute("select id, v from t").read_all())
    return sorted(zip(data["id"].to_pylist(), data["v"].to_pylist(), strict=True))


def _write_commit(path: str, version: int, *actions: dict) -> None:
    """A commit written by hand, as another engine would (Spark protocols, commits without commitInfo)."""
    log_file = Path(path) / "_delta_log" / f"{version:020d}.json"
    log_file.write_text("".join(json.dumps(action) + "\n" for action in actions))


# --- which foreign commits are data-neutral -----------------------------------------------------


def test_compaction_by_another_writer_is_data_neutral(tmp_path: Path) -> None:
    writer = DeltaTable(_table(tmp_path))
    DeltaTable(writer.table_uri).optimize.compact()

    commits = commits_since(writer, 2)

    assert commits == [ForeignCommit(3, "OPTIMIZE", True)]
    assert rearranged_only(commits)
    assert commits[0].describe() == "version 3: OPTIMIZE by another writer"


def test_z_order_by_another_writer_is_data_neutral(tmp_path: Path) -> None:
    writer = DeltaTable(_table(tmp_path))
    DeltaTable(writer.table_uri).optimize.z_order(["v"])

    assert commits_since(writer, 2) == [ForeignCommit(3, "OPTIMIZE", True)]


def test_vacuum_by_another_writer_makes_two_data_neutral_commits(tmp_path: Path) -> None:
    writer = DeltaTable(_table(tmp_path))
    other = DeltaTable(writer.table_uri)
    other.optimize.compact()
    removed = other.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)

    commits = commits_since(writer, 2)

    assert len(removed) == 3
    assert [(c.version, c.operation) for c in commits] == [
        (3, "OPTIMIZE"),
        (4, "VACUUM START"),
        (5, "VACUUM END"),
    ]
    assert rearranged_only(commits)


@pytest.mark.parametrize(
    ("change", "operation"),
    [
        (lambda t: write_deltalake(t, _rows(100, 101), mode="append"), "WRITE"),
        (lambda t: _upsert(t, retries=None), "MERGE"),
        (lambda t: t.delete("id = 3"), "DELETE"),
        (lambda t: write_deltalake(t, _rows(0, 1), mode="overwrite"), "WRITE"),
    ],
    ids=["append", "merge", "delete", "overwrite"],
)
def test_row_changes_by_another_writer_are_not_neutral(
    tmp_path: Path, change: Callable[[DeltaTable], None], operation: str
) -> None:
    writer = DeltaTable(_table(tmp_path))
    other = DeltaTable(writer.table_uri)
    other.optimize.compact()
    change(DeltaTable(writer.table_uri))

    commits = commits_since(writer, 2)

    assert commits == [ForeignCommit(3, "OPTIMIZE", True), ForeignCommit(4, operation, False)]
    assert not rearranged_only(commits)
    assert (
        commits[1].describe()
        == f"version 4: {operation} by another writer (not a data-neutral rearrangement)"
    )


def test_no_commits_since_the_current_version(tmp_path: Path) -> None:
    writer = DeltaTable(_table(tmp_path))

    assert commits_since(writer, 2) == []


def test_property_change_is_neutral_unless_it_touches_the_pipelines_properties(tmp_path: Path) -> None:
    writer = DeltaTable(_table(tmp_path))
    other = DeltaTable(writer.table_uri)
    other.alter.set_table_properties({"delta.logRetentionDuration": "interval 60 days"})
    other.alter.set_table_properties({"airflow_mysql_cdc.dropped_columns": "[]"}, raise_if_not_exists=False)

    commits = commits_since(writer, 2)

    assert commits == [
        ForeignCommit(3, "SET TBLPROPERTIES", True),
        ForeignCommit(4, "SET TBLPROPERTIES", False),
    ]


def test_commit_without_commit_info_makes_the_range_unknown(tmp_path: Path) -> None:
    path = _table(tmp_path)
    writer = DeltaTable(path)
    DeltaTable(path).optimize.compact()  # version 3
    _write_commit(path, 4, {"txn": {"appId": "another-engine", "version": 1}})  # no commitInfo
    DeltaTable(path).alter.set_table_properties({"delta.logRetentionDuration": "interval 60 days"})  # 5
    naive = [(entry["version"], entry["operation"]) for entry in DeltaTable(path).history(limit=3)]

    commits = commits_since(writer, 2)

    # Read naively, the history hides the bare commit and calls the whole range neutral.
    assert naive == [(5, "SET TBLPROPERTIES"), (4, "OPTIMIZE")]
    assert commits == [ForeignCommit(v, "unknown", False) for v in (3, 4, 5)]
    assert not rearranged_only(commits)


def test_pruned_history_counts_as_unknown(tmp_path: Path) -> None:
    path = _table(tmp_path, files=4)
    writer = DeltaTable(path, version=1)
    DeltaTable(path).create_checkpoint()
    for version in (0, 1, 2):
        (Path(path) / "_delta_log" / f"{version:020d}.json").unlink()

    commits = commits_since(writer, 1)

    assert [(c.version, c.operation, c.neutral) for c in commits] == [
        (2, "unknown", False),
        (3, "unknown", False),
    ]


def test_delta_rs_history_misnumbers_entries(tmp_path: Path) -> None:
    """The scar commits_since works around: history() numbers down from the loaded version."""
    path = _table(tmp_path)
    stale = DeltaTable(path)  # version 2
    DeltaTable(path).optimize.compact()  # version 3
    write_deltalake(path, _rows(100, 101), mode="append")  # version 4

    entries = [(entry["version"], entry["operation"]) for entry in stale.history(limit=1)]

    assert entries == [(2, "WRITE"), (1, "OPTIMIZE"), (0, "WRITE")]
    assert commits_since(stale, 2) == [ForeignCommit(3, "OPTIMIZE", True), ForeignCommit(4, "WRITE", False)]


def test_table_behind_the_version_this_writer_saw_is_a_lake_mismatch(tmp_path: Path) -> None:
    writer = DeltaTable(_table(tmp_path))

    with pytest.raises(TableVersionBehindError, match="before version 7 this writer already saw") as raised:
        commits_since(writer, 7)
    assert raised.value.exit_code is ExitCode.LAKE_MISMATCH


# --- what a stale writer meets in delta-rs 1.6.6 (the module docstring's measurements) ----------


def test_stale_append_without_retries_fails_after_compaction(tmp_path: Path) -> None:
    writer = DeltaTable(_table(tmp_path))
    DeltaTable(writer.table_uri).optimize.compact()

    with pytest.raises(CommitFailedError, match=r"^Failed to commit transaction: 0$"):
        write_deltalake(
            writer, _rows(100, 101), mode="append", commit_properties=CommitProperties(max_commit_retries=0)
        )


def test_stale_merge_without_retries_fails_after_compaction(tmp_path: Path) -> None:
    writer = DeltaTable(_table(tmp_path))
    DeltaTable(writer.table_uri).optimize.compact()

    with pytest.raises(CommitFailedError, match=r"^Failed to commit transaction: 0$"):
        _upsert(writer, retries=0)


def test_stale_merge_with_retries_fails_after_compaction_as_if_data_was_added(tmp_path: Path) -> None:
    writer = DeltaTable(_table(tmp_path))
    DeltaTable(writer.table_uri).optimize.compact()

    with pytest.raises(CommitFailedError, match="a concurrent transactions added new data"):
        _upsert(writer, retries=3)


def test_stale_append_with_retries_goes_through_a_compaction(tmp_path: Path) -> None:
    writer = DeltaTable(_table(tmp_path))
    DeltaTable(writer.table_uri).optimize.compact()

    write_deltalake(
        writer, _rows(100, 101), mode="append", commit_properties=CommitProperties(max_commit_retries=3)
    )

    assert len(_contents(writer.table_uri)) == 31


def test_stale_merge_after_a_vacuum_fails_reading_the_removed_files(tmp_path: Path) -> None:
    writer = DeltaTable(_table(tmp_path))
    other = DeltaTable(writer.table_uri)
    other.optimize.compact()
    other.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)

    with pytest.raises(DeltaError, match="not found") as raised:
        _upsert(writer, retries=0)
    assert not isinstance(raised.value, CommitFailedError)


# --- which tables the pipeline may write --------------------------------------------------------


def _refusal(table: DeltaTable, role: str = "target of shop.orders", **kwargs: bool) -> str:
    with pytest.raises(UnsupportedTableFeatureError) as raised:
        check_writable(table, role, **kwargs)
    assert raised.value.exit_code is ExitCode.CONFIGURATION
    assert not raised.value.retryable
    message = str(raised.value)
    assert table.table_uri in message
    assert role in message
    return message


@pytest.mark.parametrize(
    ("feature", "name"),
    [
        (TableFeatures.DomainMetadata, "domainMetadata"),
        (TableFeatures.IcebergCompatV1, "icebergCompatV1"),
        (TableFeatures.IdentityColumns, "identityColumns"),
        (TableFeatures.RowTracking, "rowTracking"),
    ],
    ids=["domainMetadata", "icebergCompatV1", "identityColumns", "rowTracking"],
)
def test_features_delta_rs_cannot_write_are_refused(
    tmp_path: Path, feature: TableFeatures, name: str
) -> None:
    table = DeltaTable(_table(tmp_path, files=1))
    table.alter.add_feature([feature], allow_protocol_versions_increase=True)

    message = _refusal(table)

    assert f"table feature '{name}'" in message
    assert f"DROP FEATURE {name}" in message
    assert "re-snapshot" in message
    with pytest.raises(CommitFailedError, match="Unsupported table features required"):
        write_deltalake(table, _rows(100, 101), mode="append")


def test_deletion_vectors_are_refused(tmp_path: Path) -> None:
    table = DeltaTable(_table(tmp_path, files=1))
    table.alter.add_feature([TableFeatures.DeletionVectors], allow_protocol_versions_increase=True)

    message = _refusal(table, "changelog of shop.orders")

    assert "table feature 'deletionVectors'" in message
    assert "'delta.enableDeletionVectors' = false" in message
    assert "REORG TABLE <table> APPLY (PURGE)" in message
    assert "DROP FEATURE deletionVectors" in message


def test_liquid_clustering_is_refused(tmp_path: Path) -> None:
    path = _table(tmp_path, files=1)
    protocol = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["clustering", "domainMetadata"],
    }
    _write_commit(path, 1, {"commitInfo": {"operation": "CLUSTER BY"}}, {"protocol": protocol})

    message = _refusal(DeltaTable(path))

    assert "table feature 'clustering'" in message
    assert "CLUSTER BY NONE" in message
    assert "DROP FEATURE clustering" in message
    assert "table feature 'domainMetadata'" in message


def test_unknown_feature_is_refused(tmp_path: Path) -> None:
    path = _table(tmp_path, files=1)
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["someFutureFeature"]}
    _write_commit(path, 1, {"protocol": protocol})

    message = _refusal(DeltaTable(path))

    assert "table feature 'someFutureFeature'" in message
    assert "DROP FEATURE someFutureFeature" in message


def test_append_only_property_refuses_a_target_but_not_a_changelog(tmp_path: Path) -> None:
    table = DeltaTable(_table(tmp_path, files=1))
    table.alter.set_table_properties({"delta.appendOnly": "true"})

    message = _refusal(table, "target of shop.orders")

    assert "delta.appendOnly = true" in message
    assert "'delta.appendOnly' = 'false'" in message
    check_writable(table, "changelog of shop.orders")
    check_writable(table, "target of shop.orders", updates_rows=False)


def test_transaction_retention_property_is_refused(tmp_path: Path) -> None:
    table = DeltaTable(_table(tmp_path, files=1))
    table.alter.set_table_properties({"delta.setTransactionRetentionDuration": "interval 7 days"})

    message = _refusal(table, "changelog of shop.orders")

    assert "delta.setTransactionRetentionDuration = interval 7 days" in message
    assert "UNSET TBLPROPERTIES ('delta.setTransactionRetentionDuration')" in message


def test_column_mapped_table_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "mapped")
    DeltaTable.create(path, schema=_rows(0, 1).schema, configuration={"delta.columnMapping.mode": "name"})
    table = DeltaTable(path)

    message = _refusal(table)

    assert "delta.columnMapping.mode = name" in message
    assert "'delta.columnMapping.mode' = 'none'" in message
    with pytest.raises(DeltaError, match="Column mapping is not supported for write operation 'ADD COLUMN'"):
        table.alter.add_columns([Field("added", "string", nullable=True)])


def test_writer_version_above_7_is_refused(tmp_path: Path) -> None:
    path = _table(tmp_path, files=1)
    _write_commit(path, 1, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 8}})

    message = _refusal(DeltaTable(path))

    assert "writer version 8" in message


def test_reader_version_above_3_is_refused() -> None:
    # delta-rs 1.6.6 will not even load such a table ("Unsupported minimum reader version 4"): a stand-in.
    table = SimpleNamespace(
        table_uri="s3://lake/shop/orders",
        protocol=lambda: ProtocolVersions(4, 7, None, None),
        metadata=lambda: SimpleNamespace(configuration={}),
    )

    message = _refusal(table)  # type: ignore[arg-type]

    assert "reader version 4" in message


_ALLOWED = {
    "appendOnly": lambda t: t.alter.add_feature(
        [TableFeatures.AppendOnly], allow_protocol_versions_increase=True
    ),
    "appendOnly-false": lambda t: t.alter.set_table_properties({"delta.appendOnly": "false"}),
    "invariants": lambda t: t.alter.add_feature(
        [TableFeatures.Invariants], allow_protocol_versions_increase=True
    ),
    "checkConstraints": lambda t: t.alter.add_constraint({"id_not_negative": "id >= 0"}),
    "changeDataFeed": lambda t: t.alter.set_table_properties({"delta.enableChangeDataFeed": "true"}),
    "generatedColumns": lambda t: t.alter.add_feature(
        [TableFeatures.GeneratedColumns], allow_protocol_versions_increase=True
    ),
    "columnMapping": lambda t: t.alter.add_feature(
        [TableFeatures.ColumnMapping], allow_protocol_versions_increase=True
    ),
    "timestampNtz": lambda t: t.alter.add_feature(
        [TableFeatures.TimestampWithoutTimezone], allow_protocol_versions_increase=True
    ),
    "v2Checkpoint": lambda t: t.alter.add_feature(
        [TableFeatures.V2Checkpoint], allow_protocol_versions_increase=True
    ),
    "variantType": lambda t: t.alter.add_feature(
        [TableFeatures.VariantType], allow_protocol_versions_increase=True
    ),
    "variantType-preview": lambda t: t.alter.add_feature(
        [TableFeatures.VariantTypePreview], allow_protocol_versions_increase=True
    ),
}


@pytest.mark.parametrize("feature", sorted(_ALLOWED))
def test_allowed_feature_passes_and_takes_an_append_and_a_merge(tmp_path: Path, feature: str) -> None:
    path = _table(tmp_path, files=1)
    _ALLOWED[feature](DeltaTable(path))
    table = DeltaTable(path)

    check_writable(table, "target of shop.orders")
    check_writable(table, "changelog of shop.orders")
    write_deltalake(table, _rows(10, 12), mode="append")
    _upsert(DeltaTable(path))
    DeltaTable(path).create_checkpoint()

    expected = [(i, str(i)) for i in range(12) if i not in (1, 2)] + [(1, "one"), (99, "new")]
    assert _contents(path) == sorted(expected)
