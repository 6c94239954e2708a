"""The pipeline's own Delta table: the applied GTID set of the whole pipeline, and who may write.

Invariant: at most one writer makes progress. Every change of the state is an *overwrite* of a
one-row Delta table, and Delta rejects an overwrite whose snapshot is no longer the latest
(``CommitFailedError``: a concurrent transaction deleted data this operation read). A writer
starts by *claiming* the pipeline: it overwrites the state with ``epoch + 1``. From then on an
older writer's next state commit, or its next table commit (the sink checks each table's version
against the one it last wrote), fails with :class:`PipelineFencedError`. A writer that was
``kill -9``-ed needs no lease to expire: its successor's claim fences it.

A running writer also holds a *lease*: every state commit is a heartbeat, and a new instance
refuses to claim (``PipelineBusyError``) while the owner's heartbeat is younger than the lease,
unless the owner ran on the same host and its process is gone. A writer that finishes releases the
pipeline. So the second of two instances fails at start, and the claim's fencing covers the rest
(an instance that stalls past its lease and wakes up).

The applied set here is the pipeline's position: every GTID in it is in every target table (or
touched none of them). Tables may be *ahead* of it (a crash between a table commit and this
commit). To know by how much without reading commit history (which Delta maintenance prunes), a
batch is *intended* here before any table commits it: its number and the position it will reach
go into :attr:`PipelineState.intents`, and each table's data commit carries a Delta app transaction
with that number (:mod:`.table_positions`). An intent stays until the applied set contains its
position; a batch number is never used twice, so a table's app transaction always names the one
intent whose commit it is (an intent whose commit failed is never named).

The state also names the pipeline's *members*: the tables it streams, each with the id of the
snapshot it joined with. A table that is not a member (added to the configuration, or
re-snapshotted) must be admitted before the stream writes it
(:mod:`~airflow_mysql_cdc.engine.apply.admission`).

Last, it keeps per lake table the version at which the writer's open last found every commit since
the pipeline's own last commit data-neutral (:attr:`PipelineState.checked_versions`,
:mod:`..outside_changes`), so the next open reads only the commits made since.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid
from dataclasses import dataclass, replace

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, TableNotFoundError

from airflow_mysql_cdc.engine.errors import FencedError, LakeMismatchError
from airflow_mysql_cdc.engine.lake.foreign_commits import commits_since, rearranged_only
from airflow_mysql_cdc.engine.lake.layout import OWN_TABLE_PROPERTIES
from airflow_mysql_cdc.engine.values.gtid import GtidSet

_SCHEMA = pa.schema(
    [
        pa.field("pipeline_id", pa.string()),
        pa.field("epoch", pa.int64()),
        pa.field("owner", pa.string()),
        pa.field("applied_gtids", pa.string()),
        pa.field("batch_seq", pa.int64()),
        pa.field("updated_at_us", pa.int64()),
        pa.field("members", pa.string()),
        pa.field("intents", pa.string()),
        pa.field("checked_versions", pa.string()),
    ]
)


class PipelineFencedError(FencedError, RuntimeError):
    """Another writer claimed the pipeline; this one must stop without writing anything more."""


class PipelineBusyError(PipelineFencedError):
    """Another live writer holds the pipeline's lease: a second instance refuses to start."""


class PipelineMismatchError(LakeMismatchError, ValueError):
    """The lake location holds another pipeline's state."""


_REARRANGEMENT_RETRIES = 5


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


RELEASED = ""
"""Owner of a pipeline whose last writer finished and let go of it."""


def _owner_is_dead_here(owner: str) -> bool:
    """True when the owner ran on this host and its process is gone (a kill -9, a crash)."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


@dataclass(frozen=True)
class PipelineState:
    pipeline_id: str
    epoch: int
    owner: str
    applied_gtids: GtidSet
    batch_seq: int
    updated_at_us: int
    table_version: int
    """Version of the state table holding this row: the snapshot the next overwrite is based on."""
    members: dict[str, str] | None = None
    """Streamed table -> id of the snapshot it joined with ("" when it joined without one); None
    for a state written before membership was recorded."""
    intents: dict[int, GtidSet] | None = None
    """Batch number -> the position its table commits record, for batches whose position the applied
    set does not contain yet (a crash between table commits and the state commit); None for a
    state written before intents were recorded (:mod:`.legacy` moves such a lake on)."""
    checked_versions: dict[str, int] | None = None
    """``<kind>:<table>`` (``target:shop.orders``) -> the version at which an open last found every
    commit to that lake table since the pipeline's own last one data-neutral (None: never checked)."""

    @property
    def holds_no_batch(self) -> bool:
        """No table can hold a batch of this pipeline: none was committed to the state, none intended.

        Only then may a run move the pipeline to any start it asks for (its first run). A pending
        intent means a crash may have left some table holding that batch."""
        return self.batch_seq == 0 and not self.intents

    @property
    def reach(self) -> GtidSet:
        """What a table may hold: the applied set and every intended batch's position.

        A writer records a batch's position with its next state commit (:mod:`.lease`), so between
        two batches the tables hold the last intended position while the applied set lags it."""
        reach = self.applied_gtids
        for position in (self.intents or {}).values():
            reach = reach | position
        return reach

    @property
    def last_batch_seq(self) -> int:
        """The highest batch number committed or intended (a table may hold any number up to it)."""
        return self.next_batch_seq - 1

    @property
    def next_batch_seq(self) -> int:
        """A batch number no table commit has used: above every committed and intended one."""
        return max([self.batch_seq, *(self.intents or {})]) + 1

    def intending(self, batch_seq: int, position: GtidSet) -> dict[int, GtidSet]:
        """The intents with ``batch_seq`` reaching ``position`` added."""
        return {**(self.intents or {}), batch_seq: position}


class PipelineStateStore:
    def __init__(self, path: str, pipeline_id: str, storage_options: dict[str, str] | None = None):
        self.path = str(path)
        self.pipeline_id = pipeline_id
        self.storage_options = storage_options
        self._table: DeltaTable | None = None
        self._probe: DeltaTable | None = None  # the fence check's own view (``assert_still_owner``)

    def read(self) -> PipelineState | None:
        try:
            table = DeltaTable(self.path, storage_options=self.storage_options)
        except TableNotFoundError:
            return None
        return self._state_of(table)

    def _state_of(self, table: DeltaTable) -> PipelineState | None:
        rows = table.to_pyarrow_table().to_pylist()
        if not rows:
            return None
        row = rows[0]
        if row["pipeline_id"] != self.pipeline_id:
            raise PipelineMismatchError(
                f"{self.path} holds the state of pipeline {row['pipeline_id']!r}, not {self.pipeline_id!r}: "
                "point this pipeline at its own lake location"
            )
        return PipelineState(
            pipeline_id=row["pipeline_id"],
            epoch=row["epoch"],
            owner=row["owner"],
            applied_gtids=GtidSet.parse(row["applied_gtids"]),
            batch_seq=row["batch_seq"],
            updated_at_us=row["updated_at_us"],
            table_version=table.version(),
            members=json.loads(row["members"]) if row.get("members") is not None else None,
            intents=_intents_from_json(row.get("intents")),
            checked_versions=json.loads(row["checked_versions"]) if row.get("checked_versions") else None,
        )

    def claim(self, owner: str, initial_applied: GtidSet, *, lease_s: float = 0.0) -> PipelineState:
        """Become the pipeline's only writer: epoch + 1. A concurrent claim makes one of them fail.

        A previous owner that has not released the pipeline and whose last heartbeat is younger than
        ``lease_s`` is taken to be alive: the claim fails with :class:`PipelineBusyError`, so a
        second instance never starts writing next to a running one. A previous owner that ran on
        this host and whose process is gone is known dead, and is taken over at once.
        """
        try:
            table = DeltaTable(self.path, storage_options=self.storage_options)
        except TableNotFoundError:
            table = None
        previous = self._state_of(table) if table is not None else None
        if previous is not None and previous.owner not in (RELEASED, owner):
            age_s = (time.time_ns() // 1000 - previous.updated_at_us) / 1e6
            if age_s < lease_s and not _owner_is_dead_here(previous.owner):
                raise PipelineBusyError(
                    f"pipeline {self.pipeline_id!r} is being written by {previous.owner} (epoch "
                    f"{previous.epoch}, last heartbeat {age_s:.0f}s ago); a second instance must not "
                    f"write it at the same time, so this one stops without writing. If that instance "
                    f"is gone, its lease expires {lease_s - age_s:.0f}s from now."
                )
        state = PipelineState(
            pipeline_id=self.pipeline_id,
            epoch=(previous.epoch if previous else 0) + 1,
            owner=owner,
            applied_gtids=previous.applied_gtids if previous else initial_applied,
            batch_seq=previous.batch_seq if previous else 0,
            updated_at_us=time.time_ns() // 1000,
            table_version=-1,
            members=previous.members if previous else {},
            intents=previous.intents if previous else {},
            checked_versions=previous.checked_versions if previous else None,
        )
        return self._write(table, state, "claim")

    def commit(
        self,
        current: PipelineState,
        applied: GtidSet,
        batch_seq: int,
        *,
        release: bool = False,
        members: dict[str, str] | None = None,
        intents: dict[int, GtidSet] | None = None,
        checked_versions: dict[str, int] | None = None,
    ) -> PipelineState:
        """Record progress (also the lease's heartbeat); ``release`` lets the next instance in at once.

        ``members`` replaces the member tables, ``intents`` the intended batches and
        ``checked_versions`` the versions vouched for; by default they are kept. Intents whose position
        ``applied`` contains are dropped: no table can be ahead by them any more.

        Fails with PipelineFencedError if anyone wrote the state since ``current``.
        """
        assert self._table is not None and self._table.version() == current.table_version
        state = PipelineState(
            pipeline_id=self.pipeline_id,
            epoch=current.epoch,
            owner=RELEASED if release else current.owner,
            applied_gtids=applied,
            batch_seq=batch_seq,
            updated_at_us=time.time_ns() // 1000,
            table_version=-1,
            members=current.members if members is None else members,
            intents=_unresolved(current.intents if intents is None else intents, applied),
            checked_versions=_vouched(current, members, checked_versions),
        )
        return self._write(self._table, state, "commit")

    def assert_still_owner(self, current: PipelineState) -> None:
        latest = self._probe
        try:
            if latest is None:
                raise LookupError("first check")
            latest.update_incremental()  # reads only the commits since: the check runs per table
        except Exception:  # first use, or the log it stood on was cleaned up (an idle hour)
            latest = self._probe = DeltaTable(self.path, storage_options=self.storage_options)
        if latest.version() != current.table_version and not self._rearranged_since(
            latest, current.table_version
        ):
            raise self._fenced(current, "its state changed since this writer's last commit")

    @staticmethod
    def _rearranged_since(latest: DeltaTable, version: int) -> bool:
        """Only maintenance (OPTIMIZE, vacuum, retention properties) committed since ``version``: the
        row this writer wrote is still the state (another writer's claim or commit is an overwrite)."""
        return version >= 0 and rearranged_only(commits_since(latest, version))

    def _write(self, table: DeltaTable | None, state: PipelineState, action: str) -> PipelineState:
        row = pa.table(
            {
                "pipeline_id": [state.pipeline_id],
                "epoch": [state.epoch],
                "owner": [state.owner],
                "applied_gtids": [str(state.applied_gtids)],
                "batch_seq": [state.batch_seq],
                "updated_at_us": [state.updated_at_us],
                "members": [None if state.members is None else json.dumps(state.members, sort_keys=True)],
                "intents": [_intents_to_json(state.intents)],
                "checked_versions": [
                    None
                    if state.checked_versions is None
                    else json.dumps(state.checked_versions, sort_keys=True)
                ],
            },
            schema=_SCHEMA,
        )
        properties = CommitProperties(
            custom_metadata={"airflow_mysql_cdc.action": action, "airflow_mysql_cdc.epoch": state.epoch},
            max_commit_retries=0,
        )
        try:
            if table is None:
                write_deltalake(
                    self.path,
                    row,
                    mode="error",
                    storage_options=self.storage_options,
                    commit_properties=properties,
                    configuration=OWN_TABLE_PROPERTIES,
                )
                table = DeltaTable(self.path, storage_options=self.storage_options)
            else:
                table = self._overwrite(table, row, properties)
        except (CommitFailedError, FileExistsError) as error:
            raise self._fenced(state, f"a concurrent {action} won ({error.__class__.__name__})") from error
        except Exception as error:  # deltalake reports "table already exists" as a generic error
            if table is None and "exist" in str(error).lower():
                raise self._fenced(state, "another writer created the state first") from error
            raise
        # The commit succeeded on the snapshot this writer read, so the row is the one it wrote: a
        # concurrent claim or commit would have made it fail (max_commit_retries=0). No read-back.
        self._table = table
        return replace(state, table_version=table.version())

    def _overwrite(self, table: DeltaTable, row: pa.Table, properties: CommitProperties) -> DeltaTable:
        """Overwrite the row; again on the newer version when only maintenance committed meanwhile
        (its commits keep the row this writer read, so the overwrite still replaces it). Returns the
        table at the version this commit made."""
        for _ in range(_REARRANGEMENT_RETRIES):
            try:
                write_deltalake(
                    table, row, mode="overwrite", schema_mode="overwrite", commit_properties=properties
                )
                return table
            except CommitFailedError:
                read_version = table.version()
                table = DeltaTable(self.path, storage_options=self.storage_options)
                if not self._rearranged_since(table, read_version):
                    raise
        raise CommitFailedError(
            f"{self.path} was rearranged {_REARRANGEMENT_RETRIES} times during one commit"
        )

    def _fenced(self, state: PipelineState, reason: str) -> PipelineFencedError:
        latest = None
        with contextlib.suppress(Exception):  # only for the message
            latest = self.read()
        holder = f"epoch {latest.epoch}, owner {latest.owner}" if latest else "unknown"
        return PipelineFencedError(
            f"pipeline {self.pipeline_id!r} is being written by another instance ({holder}); this writer "
            f"(epoch {state.epoch}, owner {state.owner}) stops: {reason}. Only one application may run "
            "per pipeline; check for a second run of this pipeline or a leftover application (spark-submit)."
        )


def _vouched(
    current: PipelineState, members: dict[str, str] | None, checked: dict[str, int] | None
) -> dict[str, int] | None:
    """The versions vouched for, without those of tables that joined or left with ``members``: a
    table that joins is vouched for by its snapshot's own commits (it may even be a new table)."""
    vouched = current.checked_versions if checked is None else checked
    if members is None or vouched is None:
        return vouched
    before = current.members or {}
    changed = {name for name in set(members) | set(before) if members.get(name) != before.get(name)}
    return {key: version for key, version in vouched.items() if key.partition(":")[2] not in changed}


def _unresolved(intents: dict[int, GtidSet] | None, applied: GtidSet) -> dict[int, GtidSet] | None:
    if intents is None:
        return None
    return {seq: position for seq, position in intents.items() if not position.issubset(applied)}


def _intents_to_json(intents: dict[int, GtidSet] | None) -> str | None:
    if intents is None:
        return None
    return json.dumps({str(seq): str(position) for seq, position in sorted(intents.items())})


def _intents_from_json(text: str | None) -> dict[int, GtidSet] | None:
    if text is None:
        return None
    return {int(seq): GtidSet.parse(position) for seq, position in json.loads(text).items()}
