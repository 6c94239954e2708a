"""One GTID range of a known segment, read by its own binlog connection, anywhere (a Spark task).

Invariant: a :class:`RangeTask` returns either *all* transactions of its range, in the order the
server sent them (binlog order), or a ``problem`` describing why not; never a silent subset. It
starts from ``end - range - {first GTID of the next range}``
(:meth:`..values.gtid_ranges.RangePlan.reader_start`), so the server sends its range and, after it, that
next GTID. Anything that arrives before the range is complete and is not in it (the next range's
first GTID: numbers are not binlog order; a GTID outside the segment end: the end was no prefix of
the binlog), or comes with a smaller number than one already seen (GTIDs assigned out of order by
hand), stops the read with a problem, because concatenating ranges in number order would then not
be binlog order. With a commit-timestamp boundary it stops *before* its first transaction committed
at or after it and reports that GTID as its ``cut``, unless that transaction belongs to the run's
consistent point (the single reader consumes it too: it does not end before every table is exact;
since the ranges are binlog order, "in the consistent point" is "before it is contained"). Failures
are returned as text: a Spark task must not die on them; the driver falls back to the single reader
instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from airflow_mysql_cdc.engine.binlog.changes import Transaction
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import StopRule
from airflow_mysql_cdc.engine.lake.change_table import build_change_tables, change_tables_to_ipc
from airflow_mysql_cdc.engine.runtime.executor_probe import EXECUTOR_REQUIREMENTS
from airflow_mysql_cdc.engine.runtime.executor_secrets import ExecutorSecrets, SecretsReference
from airflow_mysql_cdc.engine.runtime.gc_pause import BatchCollector
from airflow_mysql_cdc.engine.runtime.spark_tasks import SparkTasks
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject

log = logging.getLogger("airflow_mysql_cdc.apply")


class _RangeStop(StopRule):
    """Consume exactly one range; stop before a foreign or out-of-order GTID, or at the boundary."""

    def __init__(
        self, range_gtids: GtidSet, boundary_us: int | None, consistent_point: GtidSet | None = None
    ) -> None:
        self.range_gtids = range_gtids
        self.boundary_us = boundary_us
        self.consistent_point = consistent_point or GtidSet()
        self.remaining = range_gtids.count()
        self.cut: Gtid | None = None
        self.violation: str | None = None
        self._last_number: dict[str, int] = {}

    def stop_before(self, gtid: Gtid, commit_timestamp_us: int) -> bool:
        if gtid not in self.range_gtids:
            self.violation = f"{gtid} arrived before range {self.range_gtids} was complete"
            return True
        if gtid.number < self._last_number.get(gtid.uuid, 0):
            self.violation = (
                f"{gtid} arrived after a higher number of its server: numbers are not binlog order"
            )
            return True
        self._last_number[gtid.uuid] = gtid.number
        if (
            self.boundary_us is not None
            and commit_timestamp_us >= self.boundary_us
            and gtid not in self.consistent_point
        ):
            self.cut = gtid
            return True
        return False

    def consumed(self, gtid: Gtid) -> None:
        self.remaining -= 1

    def satisfied(self) -> bool:
        return self.remaining == 0


@dataclass(frozen=True)
class RangeTask:
    """One range reader; picklable, so a Spark task can run it on an executor."""

    endpoint: MySqlEndpoint
    tables: tuple[str, ...]
    index: int
    reader_start: str
    range_gtids: str
    boundary_us: int | None
    server_id: int
    heartbeat_s: float = 1.0
    max_buffered_bytes: int = 256 * 1024 * 1024
    keep_changes: bool = True
    """False only for benchmarks: count the rows and ship nothing back (read scaling without pickling)."""
    columnar: bool = False
    """Ship the changes as Arrow change tables (built here, beside the other readers) and the
    transactions as (GTID, commit timestamp) pairs, instead of pickled transactions."""
    consistent_point: str = ""
    """Transactions of this set are never a boundary cut (see the module docstring)."""
    secrets: SecretsReference | None = None
    """Where the password stripped from this task is (None: the endpoint holds its own)."""

    def for_executors(self, publish: Callable[[dict], SecretsReference]) -> RangeTask:
        """This task without the password, naming the secrets ``publish`` shares it in."""
        reference = publish({"mysql": self.endpoint.password, "lake": {}})
        return replace(self, endpoint=replace(self.endpoint, password=""), secrets=reference)

    def with_secrets(self) -> RangeTask:
        """This task with the password :meth:`for_executors` took out put back (where it runs)."""
        if self.secrets is None:
            return self
        password = self.secrets.read()["mysql"]
        return replace(self, endpoint=replace(self.endpoint, password=password), secrets=None)

    def run(self) -> RangeResult:
        """Read the range; failures come back as text (a Spark task must not die on them)."""
        started = time.perf_counter()
        stop = _RangeStop(
            GtidSet.parse(self.range_gtids), self.boundary_us, GtidSet.parse(self.consistent_point)
        )
        reader = BinlogReader(
            self.endpoint,
            tables=self.tables,
            server_id=self.server_id,
            heartbeat_s=self.heartbeat_s,
            max_buffered_bytes=self.max_buffered_bytes,
        )
        transactions: list[Transaction] = []
        marks: list[tuple[str, int]] = []
        change_tables: list[tuple[JsonObject, bytes]] | None = None
        rows = 0
        error: str | None = None

        def read() -> Iterator[Transaction]:
            nonlocal rows
            for transaction in reader.read(GtidSet.parse(self.reader_start), stop):
                rows += len(transaction.changes)
                if self.columnar:
                    marks.append((str(transaction.gtid), transaction.commit_timestamp_us))
                yield transaction

        # The whole range is one batch: every change stays alive until the result is built.
        with BatchCollector():
            try:
                if not self.keep_changes:
                    for _ in read():
                        pass
                elif self.columnar:  # gathered into the change tables as they arrive
                    change_tables = change_tables_to_ipc(build_change_tables(read()))
                else:  # a spilled transaction is read back here: the result travels as one pickle
                    transactions = [
                        Transaction(t.gtid, t.commit_timestamp_us, list(t.changes)) for t in read()
                    ]
            except Exception as failure:  # noqa: BLE001 - reported to the driver, which falls back
                error = f"{type(failure).__name__}: {failure}"
        if error is None and stop.violation is None and stop.cut is None and stop.remaining:
            error = f"the read ended with {stop.remaining} transaction(s) of the range unread"
        return RangeResult(
            index=self.index,
            transactions=transactions,
            cut=stop.cut,
            problem=stop.violation or error,
            seconds=time.perf_counter() - started,
            rows=rows,
            marks=marks,
            change_tables=change_tables,
        )


@dataclass
class RangeResult:
    index: int
    transactions: list[Transaction]
    cut: Gtid | None
    """The range's first transaction committed at or after the boundary (not included), if any."""
    problem: str | None
    seconds: float
    rows: int
    marks: list[tuple[str, int]] = field(default_factory=list)
    """Columnar results: every transaction read, as (GTID, commit timestamp in µs), in order."""
    change_tables: list[tuple[JsonObject, bytes]] | None = None
    """Columnar results: the changes as :func:`.change_tables_to_ipc` shipped them."""


RangeRunner = Callable[[Sequence[RangeTask]], list[RangeResult]]


def _run_task(task: RangeTask) -> RangeResult:
    return task.with_secrets().run()


def run_ranges_in_threads(tasks: Sequence[RangeTask]) -> list[RangeResult]:
    """Range readers as threads of this process: correct, but the GIL serialises the decoding."""
    with ThreadPoolExecutor(max_workers=max(1, len(tasks))) as pool:
        return list(pool.map(_run_task, tasks))


def _import_engine(_: int) -> int:
    import pyarrow as pa

    import airflow_mysql_cdc.engine.apply.range_reader  # noqa: F401

    # The first cast of a process loads pyarrow.compute's kernels (about 1 s, once).
    return len(pa.array([0], pa.int64()).cast(pa.timestamp("us", tz="UTC")))


def spark_range_runner(spark: SparkTasks | None = None) -> RangeRunner:
    """Range readers as Spark tasks, one per range, each on its own replication connection.

    Tasks carry no password: it reaches the executors as a broadcast for the job that needs it,
    destroyed when the job ends (:mod:`~airflow_mysql_cdc.engine.runtime.executor_secrets`).
    """
    spark = spark or SparkTasks.session("mysql-cdc-parallel-catchup")
    spark.require(EXECUTOR_REQUIREMENTS, name="parallel catch-up")
    # Start the Python workers now, while the driver opens the pipeline: a cold worker spends 1-2 s
    # importing the engine and pyarrow.compute in its first task, which would delay the first wave.
    spark.warm_up(_import_engine, name="range readers")
    context = spark.context

    def run(tasks: Sequence[RangeTask]) -> list[RangeResult]:
        secrets = ExecutorSecrets(context)
        shipped = [task.for_executors(secrets.publish) for task in tasks]
        try:
            return spark.run(secrets.bind(_run_task), shipped, description=f"{len(tasks)} GTID-range readers")
        finally:
            secrets.withdraw()

    return run
