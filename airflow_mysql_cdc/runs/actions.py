"""What an operator asks of one run through its conf: re-snapshot, pause, resume, rebase.

A run triggered with a conf acts on named tables without a code change (docs/operations.md, "Acting
on one table"):

- ``{"resnapshot": ["db.t", ...]}``: snapshot these tables again in this run (every row replaced,
  lock-free, then joined to the stream at the run's position); an entry may be
  ``{"table": "db.t", "where": "<predicate>"}`` or ``{"table": "db.t", "key_from": [...], "key_to":
  [...]}`` to re-load only those rows (:mod:`airflow_mysql_cdc.engine.verify`);
- ``{"pause": ["db.t"]}`` / ``{"resume": ["db.t"]}``: take a table out of the stream, its lake copy
  frozen at the run's start, and later catch it up and stream it again;
- ``{"rebase_checkpoint": "<gtid set>", "confirm_rebase": true}``: disaster recovery, the pipeline
  continues from that set. Refused unless the operator confirms (they vouch that every table equals
  its source there) or the same run re-snapshots every table (the pipeline then continues from the
  snapshots, as after purged binlogs).

Invariant: the whole conf is checked before anything is written. An unknown key, a table the
pipeline does not replicate, a malformed GTID set or contradicting actions fail the run at once
(:class:`RunActionError`, never retried) naming what to fix: a typo never passes as "no action".
Each action is recorded in the run's XCom (``actions``) and in its checkpoint record, with who
triggered the run when Airflow knows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject

KEYS = ("resnapshot", "pause", "resume", "rebase_checkpoint", "confirm_rebase")
_RANGE_KEYS = ("table", "where", "key_from", "key_to")


class RunActionError(AirflowFailException):
    """The run's conf asks for something this pipeline cannot do as written."""


@dataclass(frozen=True)
class ResnapshotRequest:
    """One table to snapshot again: whole (no ``where``, no key bounds) or only the rows named."""

    table: str
    where: str | None = None
    key_from: tuple[Any, ...] | None = None
    key_to: tuple[Any, ...] | None = None

    @property
    def whole(self) -> bool:
        return self.where is None and self.key_from is None and self.key_to is None

    def to_json(self) -> JsonObject:
        data: JsonObject = {"table": self.table}
        if self.where is not None:
            data["where"] = self.where
        if self.key_from is not None:
            data["key_from"] = list(self.key_from)
        if self.key_to is not None:
            data["key_to"] = list(self.key_to)
        return data


@dataclass(frozen=True)
class RunActions:
    resnapshot: tuple[ResnapshotRequest, ...] = ()
    pause: tuple[str, ...] = ()
    resume: tuple[str, ...] = ()
    rebase_checkpoint: GtidSet | None = None
    confirm_rebase: bool = False
    triggered_by: str | None = None

    @property
    def any(self) -> bool:
        return bool(self.resnapshot or self.pause or self.resume or self.rebase_checkpoint is not None)

    @property
    def whole_tables(self) -> tuple[str, ...]:
        """Tables re-snapshotted whole."""
        return tuple(request.table for request in self.resnapshot if request.whole)

    @property
    def row_ranges(self) -> tuple[ResnapshotRequest, ...]:
        """Re-loads of some rows only."""
        return tuple(request for request in self.resnapshot if not request.whole)

    @property
    def confirmed_rebase(self) -> bool:
        """The pipeline moves to :attr:`rebase_checkpoint` keeping its tables (the operator vouches)."""
        return self.rebase_checkpoint is not None and self.confirm_rebase

    def to_record(self) -> list[JsonObject]:
        """One entry per action, for the XCom and the checkpoint record (the audit trail)."""
        entries: list[JsonObject] = []
        by = {"triggered_by": self.triggered_by} if self.triggered_by else {}
        for request in self.resnapshot:
            entries.append({"action": "resnapshot", **request.to_json(), **by})
        entries += [{"action": "pause", "table": name, **by} for name in self.pause]
        entries += [{"action": "resume", "table": name, **by} for name in self.resume]
        if self.rebase_checkpoint is not None:
            entries.append(
                {
                    "action": "rebase_checkpoint",
                    "gtid_set": str(self.rebase_checkpoint),
                    "confirmed": self.confirm_rebase,
                    **by,
                }
            )
        return entries


def read_run_actions(
    conf: Mapping[str, Any] | None, tables: Sequence[str], triggered_by: str | None = None
) -> RunActions:
    """The actions of a run's ``conf``, checked against the pipeline's ``tables`` (module doc)."""
    conf = dict(conf or {})
    unknown = sorted(set(conf) - set(KEYS))
    if unknown:
        raise RunActionError(
            f"the run's conf has keys this pipeline does not know: {', '.join(unknown)}. Known: "
            f'{", ".join(KEYS)} (docs/operations.md, "Acting on one table"). Nothing was done; trigger '
            "the run again with a corrected conf."
        )
    configured = {str(TableRef.parse(name)) for name in tables}
    resnapshot = tuple(_resnapshot_request(entry, configured) for entry in _list(conf, "resnapshot"))
    pause = tuple(_configured(name, configured, "pause") for name in _list(conf, "pause"))
    resume = tuple(_configured(name, configured, "resume") for name in _list(conf, "resume"))
    _no_contradictions(resnapshot, pause, resume)
    rebase = _rebase_checkpoint(conf.get("rebase_checkpoint"))
    confirm = conf.get("confirm_rebase", False)
    if not isinstance(confirm, bool):
        raise RunActionError(f"confirm_rebase must be true or false, not {confirm!r}")
    if confirm and rebase is None:
        raise RunActionError("confirm_rebase without rebase_checkpoint: say which GTID set to continue from")
    actions = RunActions(resnapshot, pause, resume, rebase, confirm, triggered_by)
    if rebase is not None and not confirm and set(actions.whole_tables) != configured:
        raise RunActionError(
            f"rebase_checkpoint {rebase} would move the pipeline to a position its lake does not hold. "
            'Either re-snapshot every table in the same run (add "resnapshot": '
            f"{sorted(configured)}; the pipeline then continues from the snapshots), or confirm that every "
            'table in the lake equals its source as of that set (add "confirm_rebase": true; the run '
            "is recorded as confirmed). Nothing was done."
        )
    if rebase is not None and (pause or resume):
        raise RunActionError(
            "rebase_checkpoint cannot be combined with pause or resume: do them in separate runs"
        )
    return actions


def _list(conf: Mapping[str, Any], key: str) -> list[Any]:
    value = conf.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list):
        raise RunActionError(f"{key} must be a list of schema.table names, not {value!r}")
    return value


def _configured(name: Any, configured: set[str], action: str) -> str:
    if not isinstance(name, str):
        raise RunActionError(f"{action}: {name!r} is not a schema.table name")
    try:
        ref = str(TableRef.parse(name))
    except ValueError as error:
        raise RunActionError(f"{action}: {error}") from error
    if ref not in configured:
        raise RunActionError(
            f"{action}: {ref} is not one of this pipeline's tables ({', '.join(sorted(configured))}). "
            "Add it to the pipeline's tables first; nothing was done."
        )
    return ref


def _resnapshot_request(entry: Any, configured: set[str]) -> ResnapshotRequest:
    if isinstance(entry, str):
        return ResnapshotRequest(_configured(entry, configured, "resnapshot"))
    if not isinstance(entry, dict) or "table" not in entry:
        raise RunActionError(
            f'resnapshot: {entry!r} is neither a schema.table name nor an object with "table" (and '
            'optionally "where", or "key_from"/"key_to")'
        )
    unknown = sorted(set(entry) - set(_RANGE_KEYS))
    if unknown:
        raise RunActionError(
            f"resnapshot: unknown keys {', '.join(unknown)} (known: {', '.join(_RANGE_KEYS)})"
        )
    table = _configured(entry["table"], configured, "resnapshot")
    where = entry.get("where")
    if where is not None and (not isinstance(where, str) or not where.strip()):
        raise RunActionError(f"resnapshot of {table}: where must be a non-empty SQL predicate, not {where!r}")
    bounds = [_key(entry.get(key), table, key) for key in ("key_from", "key_to")]
    if where is not None and any(bound is not None for bound in bounds):
        raise RunActionError(f"resnapshot of {table}: give where or key_from/key_to, not both")
    return ResnapshotRequest(table, where.strip() if where else None, bounds[0], bounds[1])


def _key(value: Any, table: str, name: str) -> tuple[Any, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise RunActionError(
            f"resnapshot of {table}: {name} must be a list with one value per key column, not {value!r}"
        )
    return tuple(value)


def _no_contradictions(
    resnapshot: Iterable[ResnapshotRequest], pause: Sequence[str], resume: Sequence[str]
) -> None:
    whole = {request.table for request in resnapshot if request.whole}
    for label, overlap in (
        ("paused and resumed", set(pause) & set(resume)),
        ("paused and re-snapshotted", set(pause) & whole),
    ):
        if overlap:
            raise RunActionError(f"{', '.join(sorted(overlap))} cannot be {label} in the same run")
    ranged = {request.table for request in resnapshot if not request.whole}
    if both := (ranged & set(pause)) | (ranged & whole):
        raise RunActionError(
            f"{', '.join(sorted(both))}: a re-load of some rows goes alone; it cannot be combined with a "
            "pause or a whole re-snapshot of the same table"
        )


def _rebase_checkpoint(value: Any) -> GtidSet | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise RunActionError(f"rebase_checkpoint must be a GTID set in MySQL's text form, not {value!r}")
    try:
        return GtidSet.parse(value)
    except ValueError as error:
        raise RunActionError(f"rebase_checkpoint {value!r} is not a GTID set: {error}") from error
