"""A table the sink stops because its lake copy is wrong: why, found where, and the mark it leaves.

Invariant: the sink stops a table only at a position it records, in the same step that removes the
table from the members (the skeleton of :mod:`.batch_commit`): the stop's mark (a departure with
action ``stop``, :mod:`.departures`) is committed to the target with the step's app transaction
before the state records the position and the members, so a crash in between leaves the mark, and
the next open completes the stop from it (:func:`reasons_to_stop`). The sink stops a table

- **after a batch** whose MERGE did not do what the batch's events imply (:mod:`.batch_check`): at
  that batch's position, in that batch;
- **at its open**, for each table it streams (the members; a catch-up's own table): when another
  writer changed its target or changelog since the pipeline's last commit, or the log since then
  is gone (:mod:`.outside_changes`), or a stop's mark is there and the state missed it.

Either way the other tables go on, the table's changes are not written again by that sink, and the
run says so (``ApplyResult.stopped``). Guarded by ``tests/integration/test_batch_self_check.py`` and
``tests/integration/test_outside_changes.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from deltalake import DeltaTable

from airflow_mysql_cdc.engine.lake.departures import departure_of
from airflow_mysql_cdc.engine.lake.evolution import TableEvolution
from airflow_mysql_cdc.engine.lake.evolution_writes import SchemaChangeCommit, apply_to_tables
from airflow_mysql_cdc.engine.lake.outside_changes import Finding, Vouched
from airflow_mysql_cdc.engine.lake.state.pipeline_state import PipelineFencedError
from airflow_mysql_cdc.engine.lake.state.store import LakeState
from airflow_mysql_cdc.engine.lake.table_handles import TableHandle
from airflow_mysql_cdc.engine.mysql.schema import TableRef

log = logging.getLogger(__name__)

HandleOf = Callable[[str, str], TableHandle]
"""(table, ``target`` or ``changelog``) -> its handle in the sink."""


class TableChangedOutsideError(PipelineFencedError):
    """A table that joined during the run was changed by another writer: the retry's open stops it."""


def reasons_to_stop(
    tables: Iterable[str],
    members: Mapping[str, str] | None,
    handle_of: HandleOf,
    lake: LakeState,
    checked: dict[str, int],
) -> list[TableEvolution]:
    """The tables to stop at the sink's open, each with why: the ``members`` among ``tables`` (None:
    all of them, a catch-up's own table or a state without members). ``checked`` gets the version of
    every lake table the pipeline vouches for (``PipelineState.checked_versions``).

    A member snapshotted again since it joined (its latest snapshot is not ``members``' one: a
    re-snapshot this run asked for, which may even have re-created the table) is not judged here:
    its new snapshot replaced its rows, and it joins again through admission.
    """
    names = [str(TableRef.parse(name)) for name in tables]
    if members is not None:
        names = [name for name in names if name in members]
    stopping = []
    for name in names:
        reason = _interrupted_stop(name, handle_of, lake) or _changed_outside(name, handle_of, checked)
        if reason is None:
            continue
        if members and name in members and lake.latest_snapshot_id(TableRef.parse(name)) != members[name]:
            log.info("%s: snapshotted again since it joined; it joins again (%s)", name, reason)
            continue
        stopping.append(TableEvolution.stopping(name, reason))
    return stopping


def mark_stopped(
    evolution: TableEvolution,
    target: DeltaTable | None,
    commit: SchemaChangeCommit,
    members: dict[str, str],
    lake: LakeState,
) -> None:
    """Leave the stop's mark on the table's target, naming the snapshot it was streamed with, and
    take it out of ``members`` (the members the step's state commit records)."""
    log.error("%s", evolution.describe())
    snapshot_id = members.pop(evolution.table, None)
    if snapshot_id is None:  # a catch-up's table, not a member yet
        snapshot_id = lake.latest_snapshot_id(TableRef.parse(evolution.table))
    apply_to_tables(evolution, target, None, commit, snapshot_id)


def require_vouched(handle: TableHandle) -> TableHandle:
    """``handle``, unless another writer changed its table: loaded after the open (a table that joined
    since), that fails the run, and its retry's open stops the table."""
    if isinstance(handle.judgement, Finding):
        raise TableChangedOutsideError(
            f"{handle.name}: {handle.judgement.reason()}. It joined the pipeline in this run; this writer "
            "stops without writing it, and the next attempt stops that table (the others go on)."
        )
    return handle


def _interrupted_stop(name: str, handle_of: HandleOf, lake: LakeState) -> str | None:
    """The reason of a stop whose mark reached the target but whose state commit did not."""
    target = handle_of(name, "target").table
    mark = departure_of(target) if target is not None else None
    if mark is None or not mark.stopped or not mark.holds_for(lake.latest_snapshot_id(TableRef.parse(name))):
        return None
    log.warning("%s: completing its stop, which a crash interrupted", name)
    return mark.reason


def _changed_outside(name: str, handle_of: HandleOf, checked: dict[str, int]) -> str | None:
    """Why the pipeline cannot vouch for ``name``'s lake tables (None: it can)."""
    reasons = []
    for kind in ("target", "changelog"):
        handle = handle_of(name, kind)
        judgement = handle.judgement
        if isinstance(judgement, Vouched):
            if judgement.since is None:
                log.info(
                    "sink: %s %s: no commit of the pipeline's recorded yet (written before this check "
                    "existed); from version %d on, another writer's change is caught",
                    kind,
                    name,
                    judgement.version,
                )
            checked[handle.key] = judgement.version
        elif judgement is not None:
            log.warning("%s: %s", name, judgement.reason())
            reasons.append(judgement.reason())
    return "; and ".join(reasons) or None
