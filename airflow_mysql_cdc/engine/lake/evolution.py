"""What a schema change does to one tracked table: the typed value the decision, the sink and the run's
result share.

Invariant: this module imports neither deltalake, Arrow nor Spark (Arrow only inside the methods
that build columns), so the sink's contract (:mod:`.sink`), the
decision rules (:mod:`~airflow_mysql_cdc.engine.apply.schema_decisions`) and the Airflow side read
one type without loading a Delta writer. Its JSON form (:meth:`TableEvolution.to_json`) is the only
one that leaves the engine, in the run's result; a value read back from it is a *report*: it names the
columns added but not how to add them (:attr:`TableEvolution.new_columns` is empty), and the sink
refuses to apply it (:meth:`TableEvolution.check_applicable`).

The actions (docs/operations.md, "Schema changes"):

- ``evolve``: columns are added to the target and the changelog; rows that existed before the DDL
  get the value MySQL gave them (NULL or the literal DEFAULT). A dropped column stays in the lake
  and rows written after the drop hold NULL in it.
- ``truncate``: the target becomes empty (or every row soft-deleted).
- ``leave`` / ``resnapshot``: the table leaves the pipeline at the DDL's position; a ``resnapshot``
  table joins again through a new snapshot (:attr:`TableEvolution.waits_for_snapshot`).
- ``unchanged``: nothing in the lake changes (an index, a table option, a default for new rows).
- ``stop``: not a DDL's but the lake's own finding: the table's lake copy is wrong (a batch's MERGE
  did not do what its events imply, :mod:`.batch_check`; another writer changed its rows,
  :mod:`.outside_changes`). It leaves the pipeline like a ``leave`` and stays out until an operator
  re-snapshots it (:meth:`.departures.Departure.holds_for`); the run that stops it fails after it
  published the other tables' record (:func:`stopped_words` says so to the user, in one place).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

from airflow_mysql_cdc.engine.values.json_values import JsonObject

if TYPE_CHECKING:  # Arrow and the type mapping load only where columns are added, never at DAG parse
    import pyarrow as pa

    from airflow_mysql_cdc.engine.mysql.types import ColumnType

Action = Literal["evolve", "truncate", "leave", "resnapshot", "unchanged", "stop"]
ACTIONS: tuple[str, ...] = get_args(Action)
Cause = Literal["schema_change", "statement_logged_change"]
CAUSES: tuple[str, ...] = get_args(Cause)


@dataclass(frozen=True)
class AddedColumn:
    """A column the DDL added, and the value rows existing before it got (None: NULL)."""

    column: ColumnType
    existing_rows_value: Any = None

    def delta_field(self) -> pa.Field:
        import pyarrow as pa

        from airflow_mysql_cdc.engine.lake.delta_layout import delta_type

        return pa.field(self.column.name, delta_type(self.column.arrow_type()))

    def delta_value(self) -> pa.Array:
        """The value as a one-element array of the type Delta stores (the rows' own conversion)."""
        from airflow_mysql_cdc.engine.lake.delta_layout import to_delta_array
        from airflow_mysql_cdc.engine.mysql.types import to_arrow_array

        return to_delta_array(to_arrow_array(self.column, [self.existing_rows_value]))


@dataclass(frozen=True)
class TableEvolution:
    """What one DDL (at ``gtid``) does to one tracked table; see the module docstring per ``action``."""

    table: str
    action: Action
    reason: str
    added: tuple[str, ...] = ()
    """Names of the columns added, in the statement's order."""
    dropped: tuple[str, ...] = ()
    gtid: str = ""
    """The DDL's transaction; set when the run records the evolution (empty while it is decided)."""
    new_columns: tuple[AddedColumn, ...] = field(default=(), compare=False, repr=False)
    """How to add :attr:`added` (types, existing rows' values): the engine's, never in the JSON form."""
    cause: Cause = "schema_change"
    """What the table met: a DDL, or rows that no longer fit the lake (``schema_change``), or a data
    change the binlog holds as a statement, not as rows (``statement_logged_change``,
    :mod:`~airflow_mysql_cdc.engine.apply.statement_changes`). :meth:`describe` names it: a user read
    "Schema change ...: left the pipeline" for an ``UPDATE`` (issue 34)."""

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"a schema change's action is one of {', '.join(ACTIONS)}, not {self.action!r}")
        if self.cause not in CAUSES:
            raise ValueError(f"a table evolution's cause is one of {', '.join(CAUSES)}, not {self.cause!r}")
        if self.new_columns and tuple(c.column.name for c in self.new_columns) != self.added:
            raise ValueError(f"{self.table}: new_columns must describe the added columns {self.added}")

    @classmethod
    def evolving(
        cls, table: str, reason: str, new_columns: tuple[AddedColumn, ...], dropped: tuple[str, ...]
    ) -> TableEvolution:
        """An ``evolve`` decision that the sink can apply (it knows how to add every column)."""
        added = tuple(column.column.name for column in new_columns)
        return cls(table, "evolve", reason, added, dropped, new_columns=new_columns)

    @classmethod
    def stopping(cls, table: str, reason: str) -> TableEvolution:
        """The table's lake copy is wrong (``reason``): it leaves until an operator re-snapshots it."""
        return cls(table, "stop", reason)

    @property
    def leaves(self) -> bool:
        """The table stops being streamed at the DDL (it joins again only through a snapshot)."""
        return self.action in ("leave", "resnapshot", "stop")

    @property
    def waits_for_snapshot(self) -> bool:
        """The table left to be snapshotted again (the replicate operator does it in the same run)."""
        return self.action == "resnapshot"

    def check_applicable(self) -> None:
        """Raise unless a sink can apply this (an ``evolve`` read back from JSON cannot add columns)."""
        if self.action == "evolve" and len(self.new_columns) != len(self.added):
            raise ValueError(
                f"{self.table}: this schema change was read back from a run's result, which names the "
                "columns added but not their types or values; only the run that decided it can apply it"
            )

    def at(self, gtid: str) -> TableEvolution:
        """This evolution recorded at the transaction ``gtid`` (the DDL's, or the statement's)."""
        return replace(self, gtid=gtid)

    def to_json(self) -> JsonObject:
        return {
            "gtid": self.gtid,
            "table": self.table,
            "action": self.action,
            "reason": self.reason,
            "added": list(self.added),
            "dropped": list(self.dropped),
            "cause": self.cause,
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> TableEvolution:
        """A report read from a result (:meth:`to_json`); an unknown action raises ``ValueError``."""
        return cls(
            table=str(data["table"]),
            action=data["action"],
            reason=str(data.get("reason", "")),
            added=tuple(data.get("added", ())),
            dropped=tuple(data.get("dropped", ())),
            gtid=str(data.get("gtid", "")),
            cause=data.get("cause", "schema_change"),  # a result of an engine before issue 34: a DDL's
        )

    def describe(self) -> str:
        """One log line: what happened to the table, and why."""
        if self.action == "stop":
            return stopped_words(self.table, self.reason)
        what = _CAUSE_WORDS[self.cause]
        return f"{what} {self.gtid}: {self.table} {_ACTION_WORDS[self.action]}: {self.reason}"


def stopped_words(table: str, reason: str) -> str:
    """What a user is told of a stopped table, every run until it is re-snapshotted: what happened
    (``reason``), what it means, what to do."""
    return (
        f"{table}: {reason}. The pipeline stopped streaming it (the other tables go on) until it is "
        'snapshotted again: re-snapshot the table (docs/operations.md, "A table stopped"). Only this '
        "pipeline may write its Delta tables: find out who else did first."
    )


_CAUSE_WORDS: dict[str, str] = {
    "schema_change": "Schema change",
    "statement_logged_change": "Statement-logged change",
}

_ACTION_WORDS: dict[str, str] = {
    "evolve": "evolved in place",
    "truncate": "emptied (TRUNCATE)",
    "leave": "left the pipeline; its lake table is kept",
    "resnapshot": "left the pipeline to be snapshotted again",
    "unchanged": "unchanged in the lake",
    "stop": "stopped: its lake copy is wrong",
}
