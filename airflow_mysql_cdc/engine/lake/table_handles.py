"""The Delta tables one sink writes: each with the version it last saw and what it already holds.

Invariant: a writer commits to a table only at the version it last saw or after commits that only
rearranged the table's files (another writer's OPTIMIZE, vacuum; :mod:`.foreign_commits`).
Anything else moved the table without this writer: a second instance of the pipeline, which is
fenced (:class:`~.state.pipeline_state.PipelineFencedError`), never overwritten. A commit that lost
a race to a rearrangement is made again on the rearranged table, which holds the same rows
(``test_a_run_applying_while_another_process_compacts_the_same_tables_stays_exact``).

A handle also knows how far the table is *ahead* of the pipeline's state (a crash between its
commit and the state's): :func:`~.state.table_positions.ahead_of_state`, from its app transaction,
never from commit history; and whether the pipeline can vouch for the table's rows, from the commits
made since its own last one (:attr:`TableHandle.judgement`, :mod:`.outside_changes`): what the
sink's open stops a table for.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError

from airflow_mysql_cdc.engine.lake.delta_layout import recorded_row_key, table_properties
from airflow_mysql_cdc.engine.lake.file_statistics import sync_statistics_columns
from airflow_mysql_cdc.engine.lake.foreign_commits import check_writable, commits_since, rearranged_only
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.lake.outside_changes import Finding, Vouched, judge
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineFencedError, PipelineState
from airflow_mysql_cdc.engine.lake.state.table_positions import ahead_of_state
from airflow_mysql_cdc.engine.values.gtid import GtidSet

log = logging.getLogger(__name__)
T = TypeVar("T")
_REARRANGEMENT_RETRIES = 5


@dataclass
class TableHandle:
    """A Delta table this writer writes, with the version it last saw and what it already has."""

    name: str
    kind: str
    """``target`` or ``changelog``."""
    path: str
    table: DeltaTable | None
    expected_version: int | None
    already_applied: GtidSet
    judgement: Finding | Vouched | None = None
    """Whether the pipeline could vouch for the table's rows when the handle was loaded (None: no
    table yet)."""

    @property
    def key(self) -> str:
        """``<kind>:<table>``: how the state names it (``PipelineState.checked_versions``)."""
        return f"{self.kind}:{self.name}"

    @property
    def role(self) -> str:
        return f"{self.kind} of {self.name}"


class TableHandles:
    """The handles of one sink, created on first use (or all at once by :meth:`load`)."""

    def __init__(self, layout: LakeLayout, app_id: str, storage_options: dict[str, str] | None) -> None:
        self.layout = layout
        self.app_id = app_id
        self.storage_options = storage_options
        self._handles: dict[str, TableHandle] = {}

    def values(self) -> list[TableHandle]:
        return list(self._handles.values())

    def get(self, name: str, kind: str, state: PipelineState) -> TableHandle:
        key = f"{kind}:{name}"
        handle = self._handles.get(key)
        if handle is None:
            handle = self._handles[key] = self._load(name, kind, state)
        return handle

    def path(self, name: str, kind: str) -> str:
        schema, table_name = name.split(".", 1)
        if kind == "target":
            return self.layout.target(schema, table_name)
        return self.layout.changelog(schema, table_name)

    def _load(self, name: str, kind: str, state: PipelineState) -> TableHandle:
        path = self.path(name, kind)
        try:
            table = DeltaTable(path, storage_options=self.storage_options)
        except TableNotFoundError:
            table = None
        ahead = GtidSet()
        judgement: Finding | Vouched | None = None
        if table is not None:
            check_writable(table, f"{kind} of {name}", updates_rows=kind == "target")
            judgement = judge(table, f"{kind}", (state.checked_versions or {}).get(f"{kind}:{name}"))
            if sync_statistics_columns(table, recorded_row_key(table.metadata().configuration)):
                log.info("sink: %s %s now keeps statistics only where they are exact", kind, name)
            ahead = ahead_of_state(path, table.transaction_version(self.app_id), state)
            if ahead:
                log.info("sink: %s %s already has %s; those changes are skipped for it", kind, name, ahead)
        version = table.version() if table is not None else None
        return TableHandle(name, kind, path, table, version, ahead, judgement)

    def checked(
        self,
        handle: TableHandle,
        schema: pa.Schema,
        partition_by: list[str] | None,
        epoch: int,
        row_key: Sequence[str] = (),
    ) -> DeltaTable:
        """The table, created if missing (with the properties of :func:`.delta_layout.table_properties`
        for ``row_key``), at the version this writer last saw (module docstring)."""
        if handle.table is None:
            properties = table_properties(schema, row_key, partition_by or ())
            handle.table = DeltaTable.create(
                handle.path, schema=schema, partition_by=partition_by, mode="ignore",
                storage_options=self.storage_options, configuration=properties, raise_if_key_not_exists=False,
            )  # fmt: skip
            handle.expected_version = handle.table.version()
        handle.table.update_incremental()
        if handle.table.version() != handle.expected_version:
            self._accept_rearrangements(handle, epoch)
        return handle.table

    def commit(self, handle: TableHandle, epoch: int, write: Callable[[DeltaTable], T]) -> T:
        """Run ``write`` (one commit) on the checked table; again after a lost race to a rearrangement."""
        for _ in range(_REARRANGEMENT_RETRIES):
            table = handle.table
            assert table is not None, "checked() the table first"
            try:
                result = write(table)
            except (CommitFailedError, DeltaError) as error:
                # A lost race: CommitFailedError; files a concurrent compaction replaced and a vacuum
                # deleted while this write read them: DeltaError ("... not found").
                table.update_incremental()
                if table.version() == handle.expected_version:
                    if isinstance(error, CommitFailedError):
                        raise PipelineFencedError(f"commit to {handle.path} failed: {error}") from error
                    raise
                self._accept_rearrangements(handle, epoch)
                continue
            # The write moved ``table`` to the version it committed: that version, not a later one
            # (a foreign commit right after it must still meet the next check).
            handle.expected_version = table.version()
            return result
        raise PipelineFencedError(
            f"{handle.path} was rearranged by another writer {_REARRANGEMENT_RETRIES} times while this "
            "writer tried to commit; it stops and its retry continues from the lake"
        )

    def forget(self, names: set[str]) -> None:
        """Drop the handles of ``names``' tables (written by someone else since): loaded again on use."""
        for key in [key for key, handle in self._handles.items() if handle.name in names]:
            del self._handles[key]

    def refresh(self, name: str) -> None:
        """Take the current versions of a table written outside :meth:`commit` (schema changes)."""
        for kind in ("target", "changelog"):
            handle = self._handles.get(f"{kind}:{name}")
            if handle is not None and handle.table is not None:
                handle.table.update_incremental()
                handle.expected_version = handle.table.version()

    def _accept_rearrangements(self, handle: TableHandle, epoch: int) -> None:
        """Move the expected version over commits that only rearranged files; fence on anything else."""
        table = handle.table
        assert table is not None and handle.expected_version is not None
        foreign = commits_since(table, handle.expected_version)
        if not rearranged_only(foreign):
            changed = ", ".join(commit.describe() for commit in foreign if not commit.neutral)
            raise PipelineFencedError(
                f"{handle.path} moved from version {handle.expected_version} to {table.version()} without "
                f"this writer (epoch {epoch}): {changed}. Another instance is writing this pipeline; this "
                "writer stops."
            )
        log.info(
            "sink: %s %s was rearranged by another writer (%s); continuing on version %d",
            handle.kind,
            handle.name,
            ", ".join(commit.describe() for commit in foreign),
            table.version(),
        )
        check_writable(table, handle.role, updates_rows=handle.kind == "target")
        handle.expected_version = table.version()
