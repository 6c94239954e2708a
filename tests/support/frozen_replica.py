"""The source as of exactly a GTID set: a replica whose applier moves only when asked, and stops there.

Comparing the lake with the source *after the writers stopped* proves only that the last run caught
up; it cannot see a run that published an end set its lake does not equal (a run that ended before
its snapshot's chunks were exact, say) as long as a later run repaired it. A replica makes the
published set itself checkable while writers run: its receiver thread copies the source's binlog
continuously, its applier thread stays stopped, and :meth:`FrozenReplica.freeze_at` runs the applier
with ``START REPLICA SQL_THREAD UNTIL SQL_AFTER_GTIDS='<end set>'``. With one applier thread and an end
set that is a prefix of the binlog (every published end set is), the replica then holds exactly the
end set: :meth:`freeze_at` checks ``@@gtid_executed`` equals it, so the comparison is against the
source at that set, not at some nearby state.

The replica only moves forward: freezing at a set older than where it stands is an error (the test
would compare with a later state). One replica serves a whole test session (the ``frozen_replica``
fixture): every published end set of the shared server is a prefix of the same binlog, and tests run
one after the other. Each test makes it follow the source from the test's start
(:meth:`FrozenReplica.follow_from_now`), so it replays only that test's transactions.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import pymysql

from airflow_mysql_cdc.engine.lake.compare import TableComparison, compare_table
from airflow_mysql_cdc.engine.lake.layout import LakeRoot
from airflow_mysql_cdc.engine.mysql.schema import quote_identifier
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.mysql import ServerPool, execute, scalar

REPLICA_FLAGS = ("--replica-parallel-workers=1", "--skip-replica-start")
"""One applier thread: ``UNTIL SQL_AFTER_GTIDS`` then stops right after the set's last transaction."""


class ReplicaFreezeError(AssertionError):
    """The replica cannot be stopped at exactly the requested set."""


def _executed(endpoint: MySqlEndpoint) -> GtidSet:
    return GtidSet.parse(scalar(endpoint, "SELECT @@GLOBAL.gtid_executed"))


def _applier_status(endpoint: MySqlEndpoint) -> dict[str, str]:
    with endpoint.connect() as connection, connection.cursor(pymysql.cursors.DictCursor) as cursor:
        cursor.execute("SHOW REPLICA STATUS")
        row = cursor.fetchone() or {}
    return {key: str(value) for key, value in row.items()}


@dataclass
class FrozenReplica:
    """A sandbox server replicating from ``source``; its applier runs only inside :meth:`freeze_at`."""

    endpoint: MySqlEndpoint
    source: MySqlEndpoint

    @classmethod
    def start(cls, pool: ServerPool, source: MySqlEndpoint, *, name: str = "frozen_replica") -> FrozenReplica:
        """A new sandbox server of ``pool`` (stopped with the pool), following ``source``."""
        return cls.attach(pool.start(REPLICA_FLAGS, name=name).endpoint, source)

    @classmethod
    def attach(
        cls, replica: MySqlEndpoint, source: MySqlEndpoint, *, starting_after: GtidSet | None = None
    ) -> FrozenReplica:
        """Make ``replica`` (a fresh server started with :data:`REPLICA_FLAGS`) receive ``source``'s
        binlog without applying it.

        ``starting_after``: take the source's state up to this set as given and receive only what
        follows (the demo: its schema is created after it). Otherwise everything the source still
        has is received; a source that purged binlogs is followed from what it kept.
        """
        skipped = (
            str(starting_after)
            if starting_after is not None
            else scalar(source, "SELECT @@GLOBAL.gtid_purged")
        )
        if skipped:
            execute(replica, "RESET BINARY LOGS AND GTIDS", f"SET GLOBAL gtid_purged = '{skipped}'")
        execute(
            replica,
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='{source.host}', SOURCE_PORT={source.port}, "
            f"SOURCE_USER='{source.user}', SOURCE_PASSWORD='{source.password or ''}', "
            "SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1",
            "START REPLICA IO_THREAD",
        )
        return cls(replica, source)

    @classmethod
    def follow_from_now(
        cls, replica: MySqlEndpoint, source: MySqlEndpoint, databases: Iterable[str]
    ) -> FrozenReplica:
        """Reuse ``replica`` for a new test: forget what it followed, and follow ``source`` from its
        current position, with ``databases`` (created on the source, still empty) created here too.

        A replica that followed the shared server from its beginning had to replay every earlier
        test's transactions before its first freeze (minutes, late in a session); this way it only
        applies the transactions of the test at hand.
        """
        with replica.connect() as connection, connection.cursor() as cursor:
            cursor.execute("SET sql_log_bin = 0")  # local housekeeping: no GTIDs of the replica's own
            cursor.execute("STOP REPLICA")
            cursor.execute("RESET REPLICA ALL")
            cursor.execute(
                "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 't\\_%'"
            )
            for (leftover,) in cursor.fetchall():
                cursor.execute(f"DROP DATABASE {quote_identifier(leftover)}")
            for database in databases:
                cursor.execute(f"CREATE DATABASE {quote_identifier(database)}")
        return cls.attach(replica, source, starting_after=_executed(source))

    def position(self) -> GtidSet:
        return _executed(self.endpoint)

    def wait_until_received(self, gtids: GtidSet, *, timeout_s: float = 60.0) -> None:
        """Wait until the receiver has copied ``gtids`` (before the source purges its binlogs)."""
        deadline = time.monotonic() + timeout_s
        while not gtids.issubset(GtidSet.parse(_applier_status(self.endpoint).get("Retrieved_Gtid_Set", ""))):
            if time.monotonic() > deadline:
                raise ReplicaFreezeError(f"the replica did not receive {gtids} within {timeout_s:.0f}s")
            time.sleep(0.05)

    def freeze_at(self, end: GtidSet | str, *, timeout_s: float = 180.0) -> None:
        """Apply the source's transactions up to exactly ``end`` and stop there.

        ``timeout_s`` bounds a *stall*: an applier still advancing after it (a long backlog on a
        loaded machine) is given another ``timeout_s``.
        """
        end = GtidSet.parse(end) if isinstance(end, str) else end
        position = self.position()
        if not position.issubset(end):
            raise ReplicaFreezeError(
                f"the replica already applied {position - end}, which is not in {end}: it cannot go back. "
                "Freeze it at published end sets in the order they were published."
            )
        if position == end:
            return
        execute(self.endpoint, f"START REPLICA SQL_THREAD UNTIL SQL_AFTER_GTIDS = '{end}'")
        deadline = time.monotonic() + timeout_s
        while True:
            status = _applier_status(self.endpoint)
            if status.get("Last_SQL_Error") or status.get("Last_IO_Error"):
                raise ReplicaFreezeError(
                    f"replication from {self.source} stopped with an error: "
                    f"{status.get('Last_SQL_Error') or status.get('Last_IO_Error')}"
                )
            if status.get("Replica_SQL_Running") == "No" and end.issubset(self.position()):
                break
            if time.monotonic() > deadline:
                if (now := self.position()) != position:
                    position, deadline = now, time.monotonic() + timeout_s
                    continue
                raise ReplicaFreezeError(
                    f"the replica did not advance towards {end} for {timeout_s:.0f}s (it is at {now}, "
                    f"received {status.get('Retrieved_Gtid_Set')})"
                )
            time.sleep(0.05)
        position = self.position()
        if position != end:
            raise ReplicaFreezeError(
                f"the replica stopped at {position}, not exactly at {end}: the end set is not a prefix of "
                "the source's binlog"
            )

    def compare(
        self,
        end: GtidSet | str,
        lake_root: LakeRoot,
        tables: Iterable[str],
        storage_options: dict[str, str] | None = None,
    ) -> list[TableComparison]:
        """Each lake table (``schema.table``) against the source's as of exactly ``end``."""
        self.freeze_at(end)
        return [
            compare_table(self.endpoint, lake_root, *name.split(".", 1), storage_options=storage_options)
            for name in tables
        ]

    def assert_lake_equals(
        self,
        end: GtidSet | str,
        lake_root: LakeRoot,
        schema: str,
        tables: Iterable[str],
        storage_options: dict[str, str] | None = None,
    ) -> None:
        """Every table of the lake equals the source's as of ``end``; names the differing rows if not."""
        problems = [
            f"{c.table}: source {c.source_rows} rows, lake {c.lake_rows}; missing from the lake "
            f"{c.missing_from_lake}, extra or stale in the lake {c.extra_in_lake}, type mismatches "
            f"{c.type_mismatches}"
            for c in self.compare(end, lake_root, [f"{schema}.{table}" for table in tables], storage_options)
            if not c.equal
        ]
        assert not problems, f"the lake differs from the source at {end}:\n" + "\n".join(problems)
