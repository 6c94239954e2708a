"""Other writers on a pipeline table: did they only rearrange it, and can delta-rs still write it our way?

Invariant: a table that moved without this writer is accepted only when every commit since the version
the writer last saw is a data-neutral rearrangement (:func:`rearranged_only`) and the table, re-read at
its new version, is still one delta-rs writes exactly (:func:`check_writable`). Anything else stays a
fence. Property commits count as neutral only because :func:`check_writable` runs after every refresh
(``SET TBLPROPERTIES`` can switch on deletion vectors, or a retention that drops app transactions), and
only when they leave the pipeline's own ``airflow_mysql_cdc.*`` properties alone: those hold its state.
``ADD FEATURE`` / ``UPGRADE PROTOCOL`` are not neutral: a protocol change waits for a person.

Measured on delta-rs 1.6.6 (tests/integration/test_foreign_commits.py):

- ``optimize.compact()`` and ``optimize.z_order()`` write ``OPTIMIZE`` (``DeltaOperation::name`` in
  crates/core/src/protocol/mod.rs); ``vacuum(dry_run=False)`` writes two commits, ``VACUUM START`` and
  ``VACUUM END``. Spark uses the same names, plus ``REORG`` and ``UNSET TBLPROPERTIES``.
- A writer still at the version before a compaction, committing with ``max_commit_retries=0``: append
  and merge both fail with ``CommitFailedError: Failed to commit transaction: 0``. With retries an append
  goes through, but a merge fails with "a concurrent transactions added new data" although the
  compaction only rearranged files (its adds carry ``dataChange: false``). So delta-rs never lets a
  merge through a compaction; the writer must see the compaction, then merge again from the new version.
  After a vacuum deleted the files it read, a stale merge fails with ``DeltaError`` ("... not found"),
  not ``CommitFailedError``. Guarded by the ``test_stale_*`` tests.
- ``DeltaTable.history()`` has two scars. It drops commits that carry no commitInfo, and it lists every
  commit file from the start version on, also ones newer than the loaded snapshot; either way it numbers
  the entries down from the loaded version, so every older entry gets a wrong version
  (``test_delta_rs_history_misnumbers_entries``). :func:`commits_since` therefore refreshes, reads the
  history, refreshes again (retrying if the table moved), and trusts the numbering only when it got
  exactly one entry per version; otherwise every commit of the range is ``unknown``, never neutral.
- A writer-side feature delta-rs cannot write makes every commit fail with "Unsupported table features
  required: [...]" (domainMetadata, icebergCompatV1/V2, identityColumns, rowTracking, clustering,
  inCommitTimestamp, typeWidening, vacuumProtocolCheck, unknown names). Appends, merges and deletes work
  on every feature in :data:`WRITABLE_FEATURES`; on a column-mapped table (mode ``name``/``id``) they
  work too, but ``alter.add_columns`` and a schema-overwriting re-snapshot fail, so it is refused.
  columnMapping and v2Checkpoint tables cannot be read by ``to_pyarrow_table`` or polars (DataFusion
  reads them): a verification concern, not a write one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import deltalake
from deltalake import DeltaTable

from airflow_mysql_cdc.engine.errors import ConfigurationError, LakeMismatchError
from airflow_mysql_cdc.engine.values.json_values import JsonObject

DATA_NEUTRAL_OPERATIONS: frozenset[str] = frozenset(
    {"OPTIMIZE", "VACUUM START", "VACUUM END", "REORG", "SET TBLPROPERTIES", "UNSET TBLPROPERTIES"}
)
_PROPERTY_OPERATIONS = frozenset({"SET TBLPROPERTIES", "UNSET TBLPROPERTIES"})
PIPELINE_PROPERTY_PREFIX = "airflow_mysql_cdc."
UNKNOWN_OPERATION = "unknown"
_HISTORY_ATTEMPTS = 3

# Each one measured with an append, a merge, a delete and a checkpoint (test_allowed_feature_passes_*).
WRITABLE_FEATURES: frozenset[str] = frozenset(
    {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping"}
    | {"timestampNtz", "v2Checkpoint", "variantType", "variantType-preview"}
)
# Features a protocol below writer version 7 (reader version 3) implies instead of listing them.
_LEGACY_WRITER_FEATURES = {
    2: ("appendOnly", "invariants"),
    3: ("checkConstraints",),
    4: ("changeDataFeed", "generatedColumns"),
    5: ("columnMapping",),
    6: ("identityColumns",),
}
MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7


@dataclass(frozen=True)
class ForeignCommit:
    """One commit another process made; ``neutral``: it cannot have changed the table's rows."""

    version: int
    operation: str
    neutral: bool

    def describe(self) -> str:
        verdict = "" if self.neutral else " (not a data-neutral rearrangement)"
        return f"version {self.version}: {self.operation} by another writer{verdict}"


class TableVersionBehindError(LakeMismatchError, RuntimeError):
    """The table is at a version older than one this writer saw: it was replaced or restored under it."""


def commits_since(table: DeltaTable, version: int) -> list[ForeignCommit]:
    """Every commit after ``version`` up to the current version, oldest first (refreshes ``table``)."""
    table.update_incremental()
    for _ in range(_HISTORY_ATTEMPTS):
        current = table.version()
        if current < version:
            raise TableVersionBehindError(
                f"{table.table_uri} is at version {current}, before version {version} this writer already "
                "saw: the table was replaced, restored or re-created under the pipeline. Check who did it; "
                "re-snapshot the table if it must be rebuilt."
            )
        history = table.history(limit=current - version) if current > version else []
        table.update_incremental()
        if table.version() == current:
            return _numbered(history, version, current)
    return [ForeignCommit(v, UNKNOWN_OPERATION, False) for v in range(version + 1, table.version() + 1)]


def rearranged_only(commits: Iterable[ForeignCommit]) -> bool:
    """True when no commit can have changed the table's rows (also for no commits at all)."""
    return all(commit.neutral for commit in commits)


def _numbered(history: list[JsonObject], version: int, current: int) -> list[ForeignCommit]:
    """The history's entries by version, trusted only with exactly one entry per version."""
    versions = range(version + 1, current + 1)
    if len(history) != len(versions):
        return [ForeignCommit(v, UNKNOWN_OPERATION, False) for v in versions]
    by_version = {entry["version"]: entry for entry in history}
    return [_foreign_commit(v, by_version.get(v)) for v in versions]


def _foreign_commit(version: int, commit_info: Mapping[str, Any] | None) -> ForeignCommit:
    operation = (commit_info or {}).get("operation")
    if not isinstance(operation, str) or not operation:
        return ForeignCommit(version, UNKNOWN_OPERATION, False)
    neutral = operation in DATA_NEUTRAL_OPERATIONS
    if operation in _PROPERTY_OPERATIONS:  # rows stay, but the pipeline keeps state in its own properties
        parameters = (commit_info or {}).get("operationParameters")
        neutral = isinstance(parameters, dict) and PIPELINE_PROPERTY_PREFIX not in str(parameters)
    return ForeignCommit(version, operation, neutral)


# --- can delta-rs write this table the pipeline's way? -------------------------------------------


@dataclass(frozen=True)
class WriteRefusal:
    """One reason the pipeline cannot write a table exactly: what was found, what it means, the fix."""

    found: str
    meaning: str
    remedy: str


class UnsupportedTableFeatureError(ConfigurationError, RuntimeError):
    """A table's protocol or properties keep the pipeline from writing it exactly; fix the table first."""

    def __init__(self, uri: str, role: str, refusals: list[WriteRefusal]) -> None:
        self.uri, self.role, self.refusals = uri, role, refusals
        reasons = "\n".join(f"- {r.found}: {r.meaning} What to do: {r.remedy}" for r in refusals)
        super().__init__(
            f"the pipeline cannot write {uri} (the {role}) with delta-rs {deltalake.__version__}:\n"
            f"{reasons}\nNothing was written to it; fix the table (or point the pipeline at a fresh path "
            "and re-snapshot), then rerun."
        )


_RESNAPSHOT = "or re-snapshot the source table into a fresh path the pipeline creates"
_FEATURE_REFUSALS = {
    "deletionVectors": (
        "another engine may have marked rows deleted in deletion vectors; delta-rs writes none, and a merge "
        "that rewrites such a file must not bring those rows back.",
        "in Spark, ALTER TABLE <table> SET TBLPROPERTIES ('delta.enableDeletionVectors' = false); "
        "REORG TABLE <table> APPLY (PURGE); ALTER TABLE <table> DROP FEATURE deletionVectors; " + _RESNAPSHOT,
    ),
    "clustering": (
        "liquid clustering keeps its columns in domain metadata, which delta-rs cannot write: every commit "
        "fails with 'Unsupported table features required'.",
        "in Spark, ALTER TABLE <table> CLUSTER BY NONE, then ALTER TABLE <table> DROP FEATURE clustering "
        "where your Delta version allows it; " + _RESNAPSHOT,
    ),
}


def check_writable(table: DeltaTable, role: str, *, updates_rows: bool | None = None) -> None:
    """Raise :class:`UnsupportedTableFeatureError` unless delta-rs can write ``table`` (as loaded) exactly.

    ``role`` names the table in the message ("target of shop.orders"); ``updates_rows`` (default: the
    role starts with "target") says whether the pipeline updates and deletes rows there.
    """
    if updates_rows is None:
        updates_rows = role.startswith("target")
    refusals = _protocol_refusals(table) + _property_refusals(table.metadata().configuration, updates_rows)
    if refusals:
        raise UnsupportedTableFeatureError(table.table_uri, role, refusals)


def table_features(table: DeltaTable) -> frozenset[str]:
    """The features the table's protocol requires, listed or implied by its legacy versions."""
    protocol = table.protocol()
    names = set(protocol.reader_features or ()) | set(protocol.writer_features or ())
    for writer_version, implied in _LEGACY_WRITER_FEATURES.items():
        if writer_version <= protocol.min_writer_version < 7:
            names.update(implied)
    if protocol.min_reader_version == 2:
        names.add("columnMapping")
    return frozenset(names)


def _protocol_refusals(table: DeltaTable) -> list[WriteRefusal]:
    protocol = table.protocol()
    refusals = []
    if protocol.min_reader_version > MAX_READER_VERSION or protocol.min_writer_version > MAX_WRITER_VERSION:
        refusals.append(
            WriteRefusal(
                f"protocol reader version {protocol.min_reader_version}, writer version "
                f"{protocol.min_writer_version}",
                f"it is newer than reader {MAX_READER_VERSION} / writer {MAX_WRITER_VERSION}, the newest "
                "protocol delta-rs writes; its rules for writers are unknown to the pipeline.",
                f"write this table only with the engine that upgraded it, {_RESNAPSHOT}.",
            )
        )
    for name in sorted(table_features(table) - WRITABLE_FEATURES):
        meaning, remedy = _FEATURE_REFUSALS.get(
            name,
            (
                "delta-rs cannot write tables that require it (commits fail with 'Unsupported table "
                "features required'), or the pipeline has not verified that it writes them exactly.",
                f"drop it with the engine that added it (Spark: ALTER TABLE <table> DROP FEATURE {name}), "
                + _RESNAPSHOT,
            ),
        )
        refusals.append(WriteRefusal(f"table feature '{name}'", meaning, remedy + "."))
    return refusals


def _property_refusals(configuration: Mapping[str, str], updates_rows: bool) -> list[WriteRefusal]:
    refusals = []
    if updates_rows and configuration.get("delta.appendOnly", "false").lower() == "true":
        refusals.append(
            WriteRefusal(
                "table property delta.appendOnly = true",
                "the table rejects every commit that removes a row ('Delta table is append-only'), and the "
                "pipeline applies MySQL updates and deletes by rewriting rows.",
                "ALTER TABLE <table> SET TBLPROPERTIES ('delta.appendOnly' = 'false') (delta-rs: "
                "table.alter.set_table_properties({'delta.appendOnly': 'false'})).",
            )
        )
    retention = configuration.get("delta.setTransactionRetentionDuration")
    if retention is not None:
        refusals.append(
            WriteRefusal(
                f"table property delta.setTransactionRetentionDuration = {retention}",
                "the pipeline finds its exactly-once position again in Delta app transactions, and with "
                "this property checkpoints drop them: after a quiet spell the table forgets what it applied "
                "and a replay could apply changes twice.",
                "ALTER TABLE <table> UNSET TBLPROPERTIES ('delta.setTransactionRetentionDuration').",
            )
        )
    mapping_mode = configuration.get("delta.columnMapping.mode", "none").lower()
    if mapping_mode != "none":
        refusals.append(
            WriteRefusal(
                f"table property delta.columnMapping.mode = {mapping_mode}",
                "delta-rs writes rows into a column-mapped table but refuses ADD COLUMN and schema "
                "overwrites on it, so the next MySQL schema change or re-snapshot would stop the pipeline.",
                "remove column mapping (Delta 3.3+ / Databricks: ALTER TABLE <table> SET TBLPROPERTIES "
                f"('delta.columnMapping.mode' = 'none')), {_RESNAPSHOT}.",
            )
        )
    return refusals
