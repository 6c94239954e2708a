"""Which GTID set one target or changelog table reflects, from its app transaction and the state.

Invariant: a table commit that records the position of batch ``n`` carries the Delta app
transaction ``(pipeline app id, n)``, and batch ``n`` was intended in the pipeline's state before
it (:mod:`.pipeline_state`). Batch numbers only grow and are never reused, so a table whose app
transaction is ``v``

- reflects the state's applied set or less when ``v`` is at most the state's ``batch_seq`` and no
  intent of ``v`` is pending (every batch up to the state's was committed to the state);
- is *ahead* by ``intents[v] - applied`` when ``v`` is a pending intent (a crash after this table
  committed and before the state did): exactly those transactions are skipped for it on replay.

A number above ``batch_seq`` with no intent cannot come from this version of the pipeline; it is
refused rather than guessed (:class:`TablePositionError`). Commits that only prepare a batch (a
changelog gaining columns, the first steps of a schema change) carry no app transaction: they
record nothing a replay could skip. App transactions stay in every Delta checkpoint (unless
``delta.setTransactionRetentionDuration`` is set, which the sink refuses), so none of this needs
commit history. Guarded by ``test_crash_between_table_commits_replays_nothing_twice`` and
``tests/integration/test_lake_state_durability.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from deltalake import CommitProperties, DeltaTable, Transaction
from deltalake.exceptions import TableNotFoundError

from airflow_mysql_cdc.engine.errors import LakeMismatchError
from airflow_mysql_cdc.engine.lake.state.lease import Lease
from airflow_mysql_cdc.engine.lake.state.legacy import applied_in_history
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineState
from airflow_mysql_cdc.engine.values.gtid import GtidSet

log = logging.getLogger(__name__)


class TablePositionError(LakeMismatchError, RuntimeError):
    """A table carries a batch number the pipeline's state knows nothing of."""


def pipeline_app_id(pipeline_id: str) -> str:
    """The app transaction id of a pipeline's batch commits (``airflow_mysql_cdc:<pipeline id>``)."""
    return f"airflow_mysql_cdc:{pipeline_id}"


def ahead_of_state(table_uri: str, version: int | None, state: PipelineState) -> GtidSet:
    """What the table holds beyond the state's applied set (module docstring); empty almost always."""
    if version is None:
        return GtidSet()
    intents = state.intents or {}
    if version in intents:
        return intents[version] - state.applied_gtids
    if version <= state.batch_seq:
        return GtidSet()
    raise TablePositionError(
        f"{table_uri} holds batch {version} of pipeline {state.pipeline_id!r}, whose state has committed "
        f"batches up to {state.batch_seq} and intends none numbered {version}: the state table "
        "(_cdc/state) was replaced or restored from an older copy, so which transactions this table "
        "holds is unknown. Restore the state table that belongs to this lake, or re-snapshot the "
        "tables into a fresh lake location."
    )


def settle_legacy_positions(
    state: PipelineState, tables: Mapping[str, DeltaTable], app_id: str
) -> tuple[dict[int, GtidSet], dict[str, int]]:
    """Intents for a state written before intents existed, from the tables' commit history.

    Version 0.1 numbered a batch ``batch_seq + 1`` in every commit of it, including the commits that
    only prepared it (recording the position *before* it). So a table at ``batch_seq + 1`` is ahead
    by what its newest commit metadata records beyond the state, or not ahead at all. Returns the
    intents to record (``{batch_seq + 1: position}``) and the tables to move back to ``batch_seq``
    (those at ``batch_seq + 1`` that are not ahead: their app transaction would otherwise claim the
    intent's position).
    """
    intents: dict[int, GtidSet] = {}
    rewind: dict[str, int] = {}
    for uri, table in tables.items():
        version = table.transaction_version(app_id)
        if version is None or version <= state.batch_seq:
            continue
        recorded = applied_in_history(table)
        if version != state.batch_seq + 1:
            raise TablePositionError(
                f"{uri} holds batch {version} but the pipeline's state is at batch {state.batch_seq}: a "
                "version 0.1 lake can be at most one batch ahead. Re-snapshot the tables into a fresh lake."
            )
        if recorded.issubset(state.applied_gtids):
            rewind[uri] = state.batch_seq
            continue
        if version in intents and intents[version] != recorded:
            raise TablePositionError(
                f"{uri} records batch {version} at {recorded}, another table at {intents[version]}: the "
                "lake's tables disagree on one batch. Re-snapshot the tables into a fresh lake."
            )
        intents[version] = recorded
    return intents, rewind


def move_legacy_positions(lease: Lease, paths: Sequence[str], app_id: str) -> PipelineState:
    """Give a version 0.1 state its intents (:func:`settle_legacy_positions`), under the writer's claim.

    Tables at the next batch that are not ahead get a commit that changes nothing but their app
    transaction (back to the state's batch), so only tables ahead keep a number the intents resolve.
    """
    state = lease.state
    tables: dict[str, DeltaTable] = {}
    for path in paths:
        try:
            tables[path] = DeltaTable(path, storage_options=lease.store.storage_options)
        except TableNotFoundError:
            continue
    intents, rewind = settle_legacy_positions(state, tables, app_id)
    for path, batch_seq in rewind.items():
        tables[path].alter.set_table_properties(
            {"airflow_mysql_cdc.state_format": "2"},
            raise_if_not_exists=False,
            commit_properties=CommitProperties(app_transactions=[Transaction(app_id, batch_seq)]),
        )
    log.info(
        "moved pipeline %r to state format 2: %d table(s) ahead of the state, %d rewound",
        state.pipeline_id,
        len(intents),
        len(rewind),
    )
    return lease.commit(intents=intents)
