"""BIGINT UNSIGNED keys at the top of the range: tables, a writer that moves them, and the lake's side.

Hashed ids, ``UUID_SHORT()`` values and snowflake-style ids live at 2^63 and above, where delta-rs
1.6.6 recorded a decimal(20,0)'s file statistics through a float (every key from 2^63 on as
2^63 - 1): MERGEs with the early file filter skipped the files holding such keys and inserted them
a second time, and readers filtering on them found nothing (issue 33). The helpers here give a
pipeline test such keys, a writer that keeps changing them, and the checks that see the damage:
duplicate keys, readers that skip files holding rows, which rows of a target lie in files a MERGE
(or a sorted rewrite) wrote.
"""

from __future__ import annotations

import decimal
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pymysql
from deltalake import DeltaTable, QueryBuilder

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.support.lake import ConcurrentWriter
from tests.support.mysql import execute

TOP = 2**64 - 1
"""The largest BIGINT UNSIGNED."""
HALF = 2**63
"""The first BIGINT UNSIGNED a signed BIGINT cannot hold (and a float statistic rounded it below)."""

DDL = (
    "CREATE TABLE {table} (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, owner VARCHAR(40) NOT NULL,"
    " balance DECIMAL(20,4) NOT NULL, fee DECIMAL(18,2), parent BIGINT UNSIGNED,"
    " updated_at DATETIME(6) NOT NULL)"
)
"""Beside the key: two decimals wider than a float holds, and ``parent``, the key a row moved from."""


def keys_near_2_64(count: int, *, seed: int = 64) -> list[int]:
    """``count`` keys among the last million of the range, 2^64 - 1 and 2^64 - 2 among them."""
    rng = random.Random(seed)
    keys = {TOP, TOP - 1}
    while len(keys) < count:
        keys.add(TOP - rng.randrange(1_000_000))
    return sorted(keys)


def cold_keys_below_2_64(count: int) -> list[int]:
    """``count`` keys of the second million from the top, below every key of :func:`keys_near_2_64`."""
    return [TOP - 1_000_000 - step * 997 for step in range(1, count + 1)]


def keys_across_2_63(count: int, *, seed: int = 63) -> list[int]:
    """``count`` keys: 2^63 - 1, 2^63, 2^63 + 1; snowflake-style ids (a millisecond clock << 22, a
    worker << 12, a sequence) whose clock crosses 2^41 within ten minutes; a quarter hashed ids,
    anywhere in the range."""
    rng = random.Random(seed)
    keys = {HALF - 1, HALF, HALF + 1}
    while len(keys) < count * 3 // 4:
        millis = (HALF >> 22) + rng.randint(-600_000, 600_000)
        keys.add(millis << 22 | rng.randrange(1024) << 12 | rng.randrange(4096))
    while len(keys) < count:
        keys.add(rng.getrandbits(64))
    return sorted(keys)


def _values(rng: random.Random) -> tuple[str, decimal.Decimal, decimal.Decimal | None]:
    """An owner, a balance anywhere in DECIMAL(20,4), a fee anywhere in DECIMAL(18,2) or NULL."""
    balance = decimal.Decimal(rng.randint(-(10**20) + 1, 10**20 - 1)).scaleb(-4)
    fee = None if rng.random() < 0.1 else decimal.Decimal(rng.randint(-(10**18) + 1, 10**18 - 1)).scaleb(-2)
    return f"o{rng.randint(1, 500)}", balance, fee


def create_and_seed(
    endpoint: MySqlEndpoint, table: str, keys: Sequence[int], rows: int, *, cold: Sequence[int], seed: int
) -> None:
    """Create ``table`` (:data:`DDL`) holding ``rows`` of ``keys``, chosen at random, and every key of
    ``cold``: rows no writer touches, whose snapshot files no MERGE rewrites (a big table's old rows),
    so the target keeps several files and the maintenance has something to sort."""
    rng = random.Random(seed)
    execute(endpoint, DDL.format(table=table))
    with endpoint.connect() as connection, connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} (id, owner, balance, fee, parent, updated_at)"
            " VALUES (%s, %s, %s, %s, %s, NOW(6))",
            [
                (key, *_values(rng), rng.choice((None, rng.choice(keys))))
                for key in [*rng.sample(keys, rows), *cold]
            ],
        )


class UnsignedKeyWriter(ConcurrentWriter):
    """Upserts, range updates, deletes and key moves (``UPDATE ... SET id = new``) on a :data:`DDL`
    table, every key drawn from ``keys``: a row any earlier run wrote is as likely to change as a
    new one. A key move records the old key in ``parent``; it is skipped (IGNORE) when the new key
    is taken."""

    def __init__(
        self, endpoint: MySqlEndpoint, table: str, keys: Sequence[int], *, seed: int, pause_s: float
    ) -> None:
        super().__init__(endpoint, seconds=None, seed=seed, table=table, pause_s=pause_s)
        self.keys = list(keys)

    def _transaction(self, cursor: pymysql.cursors.Cursor) -> None:
        rng, table, keys = self.rng, self.table, self.keys
        for _ in range(rng.randint(1, 4)):
            choice, place = rng.random(), rng.randrange(len(keys))
            if choice < 0.35:
                cursor.execute(
                    f"INSERT INTO {table} (id, owner, balance, fee, updated_at)"
                    " VALUES (%s, %s, %s, %s, NOW(6)) AS new ON DUPLICATE KEY UPDATE"
                    " balance = new.balance, fee = new.fee, updated_at = NOW(6)",
                    (keys[place], *_values(rng)),
                )
            elif choice < 0.6:
                _, balance, fee = _values(rng)
                cursor.execute(
                    f"UPDATE {table} SET balance = %s, fee = %s, updated_at = NOW(6)"
                    " WHERE id BETWEEN %s AND %s",
                    (balance, fee, keys[place], keys[min(place + 3, len(keys) - 1)]),
                )
            elif choice < 0.8:
                cursor.execute(f"DELETE FROM {table} WHERE id = %s", (keys[place],))
            else:
                cursor.execute(
                    f"UPDATE IGNORE {table} SET id = %s, parent = %s, updated_at = NOW(6) WHERE id = %s",
                    (rng.choice(keys), keys[place], keys[place]),
                )


def start_writers(
    endpoint: MySqlEndpoint, pools: dict[str, Sequence[int]], *, pause_s: float
) -> list[UnsignedKeyWriter]:
    """One :class:`UnsignedKeyWriter` per table of ``pools``, writing until stopped."""
    writers = [
        UnsignedKeyWriter(endpoint, table, keys, seed=number, pause_s=pause_s)
        for number, (table, keys) in enumerate(pools.items(), start=33)
    ]
    for writer in writers:
        writer.start()
    return writers


def target_rows(uri: str) -> dict[int, tuple[Any, ...]]:
    """The target's rows by key (the last of any duplicates; see :func:`duplicate_keys`)."""
    data = DeltaTable(uri).to_pyarrow_table(columns=["id", "owner", "balance", "fee", "parent", "updated_at"])
    return {int(row[0]): row[1:] for row in zip(*data.to_pydict().values(), strict=True)}


def duplicate_keys(uri: str) -> list[int]:
    """Keys the target holds more than once."""
    keys = DeltaTable(uri).to_pyarrow_table(columns=["id"]).column("id")
    counts = pc.value_counts(keys)
    return [int(item["values"]) for item in counts.to_pylist() if item["counts"] > 1]


def changed_or_gone(before: dict[int, tuple[Any, ...]], after: dict[int, tuple[Any, ...]]) -> set[int]:
    """Keys whose row a run updated (or deleted, or moved away)."""
    return {key for key, row in before.items() if after.get(key) != row}


def keys_by_writing_operation(uri: str) -> dict[str, set[int]]:
    """The target's keys grouped by the operation of the commit that added the file holding them
    (``MERGE``, ``OPTIMIZE``, the snapshot's ``WRITE``...), read from the local table's commit files."""
    log = Path(uri) / "_delta_log"
    added_by: dict[str, str] = {}
    for commit in sorted(log.glob("*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
        operation = next((a["commitInfo"].get("operation", "?") for a in actions if "commitInfo" in a), "?")
        added_by |= {unquote(a["add"]["path"]): operation for a in actions if "add" in a}
    table = DeltaTable(uri)
    grouped: dict[str, set[int]] = {}
    for path in table.get_add_actions(flatten=True).column("path").to_pylist():
        keys = pq.read_table(Path(uri) / unquote(path), columns=["id"]).column("id").to_pylist()
        grouped.setdefault(added_by.get(unquote(path), "?"), set()).update(int(key) for key in keys)
    return grouped


def readers_missing_keys(uri: str, keys: Sequence[int]) -> list[str]:
    """What delta-rs's readers, each skipping files by their statistics, fail to find among the
    target's ``keys`` of 2^63 and more: a filtered Arrow read (one key at a time for a few, all of
    them at once) and a DataFusion query, without DuckDB. Empty if they find every one."""
    table = DeltaTable(uri)
    high = sorted(key for key in keys if key >= HALF)
    singles = sorted({*high[:5], *high[-5:], *random.Random(len(high)).sample(high, min(20, len(high)))})
    problems = []
    for key in singles:
        found = table.to_pyarrow_table(columns=["id"], filters=[("id", "=", decimal.Decimal(key))]).num_rows
        if found != 1:
            problems.append(f"id = {key}: the filtered read found {found} row(s), not 1")
    found = table.to_pyarrow_table(columns=["id"], filters=[("id", "in", [decimal.Decimal(k) for k in high])])
    if found.num_rows != len(high):
        problems.append(f"id in (the {len(high)} keys >= 2^63): the filtered read found {found.num_rows}")
    above = table.to_pyarrow_table(columns=["id"], filters=[("id", ">=", decimal.Decimal(HALF))]).num_rows
    if above != len(high):
        problems.append(f"id >= 2^63: the filtered read found {above} row(s), not {len(high)}")
    literals = ", ".join(f"CAST('{key}' AS DECIMAL(20,0))" for key in singles)
    query = f"SELECT count(*) AS n FROM t WHERE id IN ({literals})"
    queried = QueryBuilder().register("t", table).execute(query).read_all().column("n")[0].as_py()
    if queried != len(singles):
        problems.append(f"DataFusion found {queried} of {len(singles)} keys >= 2^63 by value")
    return problems
