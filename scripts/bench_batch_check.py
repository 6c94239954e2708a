#!/usr/bin/env python3
"""What the batch's self-check costs (issue 33, item 3): the same batches with and without it.

The check (airflow_mysql_cdc/engine/lake/batch_check.py) adds to every table's batch a ``min`` beside
the ``max`` in the group-by that finds the last row per key, a boolean column saying which first
changes were updates or deletes, a count of the keys by past and action, and a comparison with the
MERGE's metrics. Two measurements, each interleaving "with" and "without" so drift hits both:

A. **The aggregation alone**, in memory: ``final_rows`` (with the check's columns and counts) against
   the aggregation as it was before the check (``last_per_key`` with ``max`` only, then the same
   drop and sort), ``--repeat`` times per batch size.
B. **``DeltaSink.apply_change_tables`` end to end** on a local Delta target of ``--target-rows``
   rows: ``--batches`` batches each way, alternating; "without" swaps in the aggregation of A and
   turns the comparison off (``DeltaSink.check_merges``).

Batches are 70% updates of existing keys, 20% inserts, 10% deletes, over six columns.

    .venv/bin/python scripts/bench_batch_check.py                       # 50,000-row batches
    .venv/bin/python scripts/bench_batch_check.py --batch-rows 5000 --batches 20
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import pyarrow as pa  # noqa: E402

from airflow_mysql_cdc.engine.binlog.changes import Op, RowChange, TableShape, Transaction  # noqa: E402
from airflow_mysql_cdc.engine.lake import change_table  # noqa: E402
from airflow_mysql_cdc.engine.lake.batch_check import MergeExpectation  # noqa: E402
from airflow_mysql_cdc.engine.lake.change_table import (  # noqa: E402
    OP_COLUMN,
    SEQUENCE_COLUMN,
    ChangeTable,
    FinalRows,
    build_change_tables,
    final_rows,
    last_per_key,
)
from airflow_mysql_cdc.engine.lake.delta_sink import DeltaSink  # noqa: E402
from airflow_mysql_cdc.engine.mysql.types import ColumnType  # noqa: E402
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet  # noqa: E402

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
SHAPE = TableShape(
    "bench",
    "orders",
    (
        ColumnType("id", "int", bits=64),
        ColumnType("qty", "int", bits=32),
        ColumnType("name", "text"),
        ColumnType("amount", "double"),
        ColumnType("status", "text"),
        ColumnType("note", "text"),
    ),
    ("id",),
)


def before_the_check(table: ChangeTable) -> FinalRows:
    """The aggregation as it was before the check (main at d6635a7): ``max`` only, no counts."""
    last = last_per_key(table.rows, table.shape).drop_columns([OP_COLUMN, SEQUENCE_COLUMN])
    rows = last.sort_by([(column, "ascending") for column in table.shape.primary_key])
    return FinalRows(rows, MergeExpectation())


def _row(key: int, rng: random.Random) -> dict:
    return {
        "id": key,
        "qty": rng.randrange(1000),
        "name": f"name-{key}",
        "amount": rng.random() * 1000,
        "status": rng.choice(("new", "paid", "shipped")),
        "note": "x" * rng.randrange(30),
    }


class Source:
    """A source table of keys 0..n-1 and the valid changes a workload makes to it."""

    def __init__(self, rows: int, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.rows = {key: _row(key, self.rng) for key in range(rows)}
        self.next_key = rows
        self.gtid = 0

    def batch(self, changes: int, per_transaction: int = 10) -> list[Transaction]:
        transactions = []
        for _ in range(0, changes, per_transaction):
            self.gtid += 1
            done = []
            for _ in range(per_transaction):
                roll = self.rng.random()
                if roll < 0.2 or len(self.rows) < 10:
                    key, self.next_key = self.next_key, self.next_key + 1
                    self.rows[key] = _row(key, self.rng)
                    done.append(RowChange(SHAPE, Op.INSERT, None, self.rows[key], (key,)))
                    continue
                key = self.rng.choice(list(self.rows)) if len(self.rows) < 1000 else self._some_key()
                if roll < 0.9:
                    after = _row(key, self.rng)
                    done.append(RowChange(SHAPE, Op.UPDATE, self.rows[key], after, (key,)))
                    self.rows[key] = after
                else:
                    done.append(RowChange(SHAPE, Op.DELETE, self.rows.pop(key), None, (key,)))
            stamp = 1_790_000_000_000_000 + self.gtid
            transactions.append(Transaction(Gtid(UUID, self.gtid), stamp, tuple(done)))
        return transactions

    def _some_key(self) -> int:
        while True:
            key = self.rng.randrange(self.next_key)
            if key in self.rows:
                return key


def _ms(seconds: list[float]) -> str:
    return f"median {statistics.median(seconds) * 1000:7.2f} ms (min {min(seconds) * 1000:.2f})"


def measure_aggregation(batch_rows: int, repeat: int) -> None:
    source = Source(max(batch_rows * 4, 10_000))
    table = build_change_tables(source.batch(batch_rows))["bench.orders"]
    with_check, without = [], []
    for _ in range(repeat):
        for runs, aggregate in ((with_check, final_rows), (without, before_the_check)):
            started = time.perf_counter()
            aggregate(ChangeTable(table.shape, table.rows, table.extra_rows))
            runs.append(time.perf_counter() - started)
    extra = statistics.median(with_check) - statistics.median(without)
    print(f"A. aggregation of a {table.rows.num_rows:,}-row batch ({repeat} times each)")
    print(f"   without the check: {_ms(without)}")
    print(f"   with the check:    {_ms(with_check)}")
    print(f"   the check adds {extra * 1000:.2f} ms per batch ({extra / statistics.median(without):+.0%})")


def measure_sink(batch_rows: int, batches: int, target_rows: int) -> None:
    source = Source(target_rows)
    with tempfile.TemporaryDirectory(prefix="bench-batch-check-") as lake:
        sink = DeltaSink.at(lake, "bench", tables=("bench.orders",))
        sink.open(GtidSet())
        position = GtidSet()
        snapshot = [RowChange(SHAPE, Op.INSERT, None, row, (key,)) for key, row in source.rows.items()]
        source.gtid += 1
        position |= GtidSet.of([Gtid(UUID, source.gtid)])
        sink.apply([Transaction(Gtid(UUID, source.gtid), 1, tuple(snapshot))], position)  # the target
        timings: dict[bool, list[float]] = {True: [], False: []}
        original = change_table.final_rows
        for number in range(batches * 2):
            checked = number % 2 == 0
            transactions = source.batch(batch_rows)
            tables = build_change_tables(transactions)
            position |= GtidSet.of(t.gtid for t in transactions)
            change_table.final_rows = original if checked else before_the_check  # type: ignore[assignment]
            sink.check_merges = checked
            started = time.perf_counter()
            result = sink.apply_change_tables(tables, position, len(transactions))
            timings[checked].append(time.perf_counter() - started)
            assert result.stopped == [], result.stopped
        change_table.final_rows = original  # type: ignore[assignment]
        sink.release()
    without = statistics.median(timings[False])
    extra = statistics.median(timings[True]) - without
    print(f"B. DeltaSink.apply_change_tables: {batch_rows:,}-change batches, a {target_rows:,}-row target")
    print(f"   without the check: {_ms(timings[False])}  ({batches} batches)")
    print(f"   with the check:    {_ms(timings[True])}  ({batches} batches)")
    print(f"   difference {extra * 1000:+.1f} ms per batch ({extra / without:+.1%})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch-rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--target-rows", type=int, default=200_000)
    args = parser.parse_args()
    print(f"pyarrow {pa.__version__}; batches of {args.batch_rows:,} row changes")
    measure_aggregation(args.batch_rows, args.repeat)
    measure_sink(args.batch_rows, args.batches, args.target_rows)


if __name__ == "__main__":
    main()
