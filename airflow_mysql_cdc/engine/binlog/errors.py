"""Why a binlog read stopped without finishing: one exception class per cause, each actionable.

Invariant: when any of these is raised, nothing after the reader's last complete transaction has
been yielded, so ``position`` (carried by every error as ``position``) is a safe place to resume or
to report. Each message says what happened, what it means for the data and what to do about it.

``BinlogReaderError`` is the base class; callers that only want "the read failed" catch that.
``is_retryable`` tells an orchestrator whether running the same read again can succeed without a
human changing something (only a lost connection can).
"""

from __future__ import annotations

from airflow_mysql_cdc.engine.errors import BinlogError, NextStep
from airflow_mysql_cdc.engine.values.gtid import GtidSet


class BinlogReaderError(BinlogError, RuntimeError):
    """Base class: the read stopped at ``position`` (start plus every complete transaction read)."""

    is_retryable = False

    def __init__(self, message: str, *, position: GtidSet | None = None) -> None:
        self.position = position
        super().__init__(message)


class BinlogPurgedError(BinlogReaderError):
    """The server no longer has binlog files holding transactions the reader still needs.

    ``missing`` is ``gtid_purged - position``: the transactions that can never be read again.
    Retrying cannot help; the table must be re-snapshotted.
    """

    def __init__(self, *, missing: GtidSet, position: GtidSet, server_message: str) -> None:
        self.missing = missing
        super().__init__(
            f"the MySQL server has purged binary logs this reader still needs: transactions {missing} "
            f"are gone (reading from {position or 'the beginning'}). Nothing more can be read from this "
            "position; re-snapshot the affected tables, and keep binlogs longer "
            "(binlog_expire_logs_seconds) than the longest pause between runs. "
            f"Server said: {server_message}",
            position=position,
        )


class BinlogPositionRejectedError(BinlogReaderError):
    """The server refused to start a dump from the position for a reason other than purged logs."""

    def __init__(self, *, position: GtidSet, code: int, server_message: str) -> None:
        self.code = code
        super().__init__(
            f"the MySQL server refused to stream the binlog from {position or 'the beginning'} "
            f"(error {code}): {server_message}. If the server says the replica has more GTIDs than the "
            "source, the checkpoint belongs to another server or the server was rebuilt: re-snapshot.",
            position=position,
        )


class ConnectionLostError(BinlogReaderError):
    """The connection kept dropping; the bounded reconnect attempts are used up."""

    is_retryable = True

    def __init__(self, *, attempts: int, position: GtidSet, last_error: BaseException) -> None:
        self.attempts = attempts
        super().__init__(
            f"lost the binlog connection and could not restore it after {attempts} attempts "
            f"(last error: {last_error!r}). Everything up to {position or 'the start'} was read completely; "
            "run the read again from that position once the server is reachable.",
            position=position,
        )


class SchemaChangeError(BinlogReaderError):
    """DDL on a tracked table: the reader stopped before it, so no row after it was yielded.

    ``position`` excludes ``gtid``: resuming from ``position`` would meet the same statement again.
    The caller decides what a schema change means (re-snapshot, evolve the target) and resumes
    from ``position | {gtid}`` after handling it.
    """

    def __init__(self, *, gtid: str, statement: str, schema: str, tables: tuple[str, ...], position: GtidSet):
        self.gtid = gtid
        self.statement = statement
        self.schema = schema
        self.tables = tables
        super().__init__(
            f"schema change on tracked table(s) {', '.join(tables)} in transaction {gtid}: "
            f"{_shorten(statement)!r} (default schema {schema!r}). The pipeline's schema_changes "
            "setting is 'stop', so the run stopped before it: nothing after it was applied, and rows "
            "after it have a different shape. Set schema_changes: evolve (the default) to evolve the "
            "lake table or re-snapshot it automatically (docs/operations.md), or re-snapshot the table "
            "yourself and run again.",
            position=position,
        )


class UnsupportedServerSettingError(BinlogReaderError):
    """A server or session setting makes the row images incomplete or unnamed."""

    def __init__(self, setting: str, found: str, required: str, consequence: str) -> None:
        self.setting = setting
        self.found = found
        super().__init__(
            f"{setting} is {found}, but change data capture needs {required}: {consequence}. "
            f"Set {setting}={required} (globally, in the server configuration, and in any session that "
            "overrides it) and re-snapshot tables changed while it was different."
        )


class StatementBasedChangeError(BinlogReaderError):
    """A tracked table was changed by a logged statement instead of row images (binlog_format).

    Raised before the transaction: ``position`` excludes ``gtid`` and everything before it is applied.
    The applier raises it under ``statement_changes: stop``; a reader that does not mark statement
    changes (a parallel catch-up's range reader) raises it itself.
    """

    def __init__(
        self, *, gtid: str, statement: str, schema: str, tables: tuple[str, ...], position: GtidSet
    ) -> None:
        self.gtid = gtid
        self.statement = statement
        self.schema = schema
        self.tables = tables
        super().__init__(
            f"statement-logged change of tracked table(s) {', '.join(tables)} in transaction {gtid}: "
            f"{_shorten(statement, 200)!r} (default schema {schema!r}). A session wrote it with "
            "binlog_format=STATEMENT or MIXED, so the binlog holds the statement, not the rows it "
            "changed, and the lake cannot follow it. The run stopped before that transaction; everything "
            "before it is applied. To go on, either set statement_changes: resnapshot in the pipeline "
            "configuration (the table is snapshotted again within the run while the others stream on), "
            "or re-snapshot the table and run again (docs/operations.md, 'A statement-logged change on a "
            "tracked table'). Then enforce binlog_format=ROW: find the session with mysqlbinlog "
            f"--include-gtids={gtid}, and revoke SYSTEM_VARIABLES_ADMIN/SESSION_VARIABLES_ADMIN from "
            "users who need not change it.",
            position=position,
        )
        self.next_step = NextStep.resnapshot(*tables)


class CompressedTransactionError(BinlogReaderError):
    """A compressed transaction payload (event type 40) could not be decoded."""

    def __init__(self, *, gtid: str, position: GtidSet, cause: BaseException) -> None:
        self.gtid = gtid
        super().__init__(
            f"transaction {gtid} is a compressed binlog payload (binlog_transaction_compression=ON) that "
            f"could not be decoded ({cause!r}). mysql-replication 1.0.17 would skip it silently. Install "
            "the 'zstandard' package if it is missing, or set binlog_transaction_compression=OFF and "
            "re-snapshot the tables written while it was on.",
            position=position,
        )


class TaggedGtidError(BinlogReaderError):
    """A tagged GTID event (MySQL 8.3+, event type 42) arrived; the library cannot parse it."""

    def __init__(self, *, position: GtidSet) -> None:
        super().__init__(
            "the binlog holds a transaction with a tagged GTID (SET gtid_next='AUTOMATIC:<tag>' or "
            "'<uuid>:<tag>:<n>'), which mysql-replication 1.0.17 does not parse: it would attribute the "
            "rows to the previous GTID. Tagged GTIDs are unsupported; stop using them on this server.",
            position=position,
        )


class XaTransactionError(BinlogReaderError):
    """A two-phase XA transaction touched a tracked table; its commit is a separate GTID."""

    def __init__(self, *, gtid: str, xid: str, position: GtidSet) -> None:
        self.gtid = gtid
        self.xid = xid
        super().__init__(
            f"transaction {gtid} is an XA PREPARE (xid {xid!r}) that changed a tracked table. Its rows are "
            "only committed by a later XA COMMIT with another GTID, possibly never; two-phase XA on tracked "
            "tables is unsupported. Use ordinary transactions (or XA COMMIT ... ONE PHASE).",
            position=position,
        )


class UnexpectedEventError(BinlogReaderError):
    """An event that the reader cannot place in a transaction (would risk a silent gap)."""

    def __init__(self, message: str, *, position: GtidSet) -> None:
        super().__init__(message, position=position)


class UndecodableEventError(BinlogReaderError):
    """mysql-replication could not decode an event (unknown status variable, malformed event)."""

    def __init__(self, cause: BaseException, *, gtid: str, position: GtidSet) -> None:
        self.gtid = gtid
        super().__init__(
            f"mysql-replication 1.0.17 could not decode an event of transaction {gtid} ({cause!r}). "
            "Statement-logged transactions (a session with binlog_format=STATEMENT or MIXED) are a known "
            "cause; enforce binlog_format=ROW. The read stopped before that transaction.",
            position=position,
        )


class DuplicateServerIdError(BinlogReaderError):
    """Two readers (or a reader and the server itself) would use the same replication server_id."""

    def __init__(self, server_id: int, holder: str) -> None:
        self.server_id = server_id
        super().__init__(
            f"replication server_id {server_id} is already used by {holder}. Each concurrent binlog reader "
            "needs its own server_id, distinct from the source's @@server_id and from every replica; give "
            "this reader another one (MySqlEndpoint.replication_server_id or the reader's server_id)."
        )


def _shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
