"""The open transaction: what the reader holds between a GTID event and its commit marker.

Invariant: an :class:`OpenTransaction` becomes a :class:`~.changes.Transaction` only through
:meth:`OpenTransaction.close`, called at its commit marker, and is otherwise dropped whole with its
rows (:meth:`.events.EventHandler.discard_open_transaction`, on a lost connection or at the end of a
read). So no row of a transaction reaches a consumer before every row of it was read, and a
transaction cut by a reconnect is read again from its GTID rather than continued. It holds because
all state that spans the events of one transaction lives here and nowhere else: its GTID and commit
time, whether it is already in the position (re-sent after a reconnect: checked, never decoded or
yielded again), whether a ``BEGIN`` body is open (inside it statements do not commit; outside it a
statement such as DDL is its own transaction), its schema change when the reader evolves schemas,
its statement-logged data changes when the reader marks them, and its rows (the reader's
:class:`~.backpressure.ChangeBuffer`, one per reader, so its peak memory is measured across reads).

Lifted out of the reader's stream loop, where these were five loose locals and an attribute of the
reader, so that "what is open" is one value that the handler (:mod:`.events`) replaces at a GTID and
clears at a commit. Guarded by ``test_rows_are_released_only_at_the_commit_marker``,
``test_a_reconnect_inside_a_transaction_reads_it_again_whole`` and
``test_reconnect_reopens_from_the_position_and_drops_resent_transactions``.
"""

from __future__ import annotations

from airflow_mysql_cdc.engine.binlog.backpressure import ChangeBuffer
from airflow_mysql_cdc.engine.binlog.changes import SchemaChange, StatementChange, Transaction
from airflow_mysql_cdc.engine.values.gtid import Gtid


class OpenTransaction:
    """One transaction from its GTID event until its commit marker; see the module docstring."""

    __slots__ = (
        "gtid",
        "commit_timestamp_us",
        "already_read",
        "rows",
        "in_body",
        "schema_change",
        "statement_changes",
    )

    def __init__(
        self, gtid: Gtid, commit_timestamp_us: int, *, already_read: bool, rows: ChangeBuffer
    ) -> None:
        self.gtid = gtid
        self.commit_timestamp_us = commit_timestamp_us
        self.already_read = already_read  # in the position already: a re-sent transaction
        self.rows = rows
        self.in_body = False  # after BEGIN / XA START
        self.schema_change: SchemaChange | None = None
        self.statement_changes: list[StatementChange] = []

    def __repr__(self) -> str:
        return (
            f"OpenTransaction({self.gtid}, already_read={self.already_read}, in_body={self.in_body}, "
            f"has_rows={self.has_rows()}, schema_change={self.schema_change!r}, "
            f"statement_changes={self.statement_changes!r})"
        )

    def enter_body(self) -> None:
        """``BEGIN`` / ``XA START`` / ``XA END``: statements until the commit marker belong to it."""
        self.in_body = True

    def statement_commits(self) -> bool:
        """Whether a statement (not BEGIN/COMMIT) ends it: outside a body it is its own transaction."""
        return not self.in_body

    def evolve(self, change: SchemaChange) -> None:
        """It is a DDL statement that may change tracked tables, yielded under ``"evolve"``."""
        self.schema_change = change

    def changed_by_statement(self, change: StatementChange) -> None:
        """A statement-logged data change of tracked tables, yielded as a mark for the applier."""
        self.statement_changes.append(change)

    def has_rows(self) -> bool:
        return self.rows.has_changes()

    def close(self) -> Transaction:
        """At the commit marker: the whole transaction, and an empty buffer for the next one."""
        return Transaction(
            self.gtid,
            self.commit_timestamp_us,
            self.rows.finish(),
            self.schema_change,
            tuple(self.statement_changes),
        )
