"""Statement-logged data changes of tracked tables: nothing to do, stop before them, or re-snapshot.

Invariant: no row of a table whose rows the binlog cannot give reaches the lake past that point, and
nothing is skipped silently. A session with ``binlog_format=STATEMENT`` or ``MIXED`` logs
``UPDATE t SET ...`` as the statement, not as the rows it changed; the reader marks its
transaction with a :class:`~..binlog.changes.StatementChange` naming the tracked tables it mentions
(:mod:`..binlog.events`) and reads the transaction's row events of other tables as usual. For each
table named, one rule, in this order:

1. the table already left the pipeline in this read (a DDL, an earlier statement): nothing;
2. every chunk of the table's snapshot holds the GTID (its snapshot ran after the statement, so it
   read the rows as the statement left them; see ``SchemaChanges.snapshot_reflects``): nothing. This
   is what lets a re-snapshot of the table get the pipeline past the statement
   (``test_a_table_snapshotted_after_the_statement_streams_past_it``);
3. ``statement_changes: stop`` (the default): everything before the transaction is committed, then
   :class:`~..binlog.errors.StatementBasedChangeError` names the tables, the GTID, the statement and
   the ways out;
4. ``statement_changes: resnapshot``: the table leaves the pipeline *before* the transaction (its
   rows in it are unknown), exactly as a table whose rows stopped fitting the lake does
   (``SchemaChanges.leave_before``): its departure is recorded at the position without the GTID, its
   changes from there on are dropped, every other table streams on, and the replicate operator
   snapshots it again and joins it within the run (``ApplyResult.to_resnapshot``).

Guarded by tests/unit/apply/test_statement_changes.py and, on a real server,
tests/integration/test_statement_changes.py.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from airflow_mysql_cdc.engine.apply.config import StatementChangeMode
from airflow_mysql_cdc.engine.apply.schema_changes import SchemaChanges
from airflow_mysql_cdc.engine.binlog.changes import StatementChange, Transaction
from airflow_mysql_cdc.engine.binlog.errors import StatementBasedChangeError
from airflow_mysql_cdc.engine.lake.evolution import TableEvolution
from airflow_mysql_cdc.engine.values.gtid import GtidSet

log = logging.getLogger("airflow_mysql_cdc.apply")

_STATEMENT_IN_RECORD = 1_000
"""How much of a statement the departure mark keeps (a statement can be megabytes)."""


class StatementChanges:
    """One read's handling of statement-logged changes, under ``mode`` (see the module docstring)."""

    def __init__(self, mode: StatementChangeMode, schema_changes: SchemaChanges) -> None:
        self.mode = mode
        self.schema_changes = schema_changes

    def unknown_rows(self, transaction: Transaction) -> dict[str, StatementChange]:
        """The tables whose rows ``transaction`` changed by statement and whose lake cannot take it,
        each with the first statement naming it (rules 1 and 2 of the module docstring)."""
        gtid = str(transaction.gtid)
        unknown: dict[str, StatementChange] = {}
        for change in transaction.statement_changes:
            for table in change.tables:
                if table in unknown or table in self.schema_changes.left:
                    continue
                if self.schema_changes.snapshot_reflects(table, gtid) == "all":
                    log.info(
                        "statement-logged change %s on %s: its snapshot was taken after it, nothing to do",
                        gtid,
                        table,
                    )
                    continue
                unknown[table] = change
        return unknown

    def stop_or_leave(
        self, unknown: Mapping[str, StatementChange], transaction: Transaction, position: GtidSet
    ) -> None:
        """Rules 3 and 4; the sink holds ``position`` (everything before ``transaction``)."""
        first = next(iter(unknown.values()))
        if self.mode == "stop":
            raise StatementBasedChangeError(
                gtid=str(transaction.gtid),
                statement=first.statement,
                schema=first.default_schema,
                tables=tuple(sorted(unknown)),
                position=position,
            )
        evolutions = [
            TableEvolution(
                table,
                "resnapshot",
                f"changed by a statement-logged {_verb(change.statement)} (a session with "
                "binlog_format=STATEMENT or MIXED): its rows are not in the binlog",
                cause="statement_logged_change",
            )
            for table, change in sorted(unknown.items())
        ]
        self.schema_changes.leave_before(
            evolutions, transaction, first.statement[:_STATEMENT_IN_RECORD], position
        )


def _verb(statement: str) -> str:
    """The statement's first word (``UPDATE``, ``LOAD``), for a reason that fits on a line."""
    words = statement.split(None, 1)
    return words[0].upper() if words else "statement"
