"""The differential test of the lake's write path: key types at their edges, a plain reference, layouts.

Every column type the pipeline carries as a row key is here (:data:`KEY_KINDS`) with its edge values
(always used) and a Hypothesis strategy for more; workloads of inserts, updates, deletes and key moves
are applied to a plain in-memory :class:`Reference` and, through the project's own sink
(:class:`~airflow_mysql_cdc.engine.lake.delta_sink.DeltaSink`), to Delta tables laid out every way a
lake can be (:data:`LAYOUTS`). tests/integration/test_write_path_differential.py compares the two.
"""

from __future__ import annotations

import datetime
import decimal
import glob
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder, write_deltalake
from deltalake.exceptions import TableNotFoundError
from hypothesis import strategies as st

from airflow_mysql_cdc.engine.binlog.changes import Op, RowChange, TableShape, Transaction
from airflow_mysql_cdc.engine.lake.data_files import write_data_file
from airflow_mysql_cdc.engine.lake.delta_layout import (
    DELETED_COLUMN,
    OP_COLUMN,
    ROW_KEY_PROPERTY,
    TARGET_FILE_SIZE_PROPERTY,
    snapshot_rows,
    target_schema,
    to_delta_array,
)
from airflow_mysql_cdc.engine.lake.delta_sink import DeltaSink
from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.types import ColumnType, to_arrow_array
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.lake_commits import DeltaSnapshotWriter
from airflow_mysql_cdc.engine.snapshot.window_task import WrittenWindow
from airflow_mysql_cdc.engine.values.gtid import Gtid, GtidSet

SOURCE_UUID = "6f1c7c1e-0b7e-11f1-9a4d-00163e000001"
BASE_US = 1_795_000_000_000_000
PIPELINE = "differential"
D = decimal.Decimal

# --- key kinds ------------------------------------------------------------------------------------

_POWERS = (0, 1, -1, 2, 2**31 - 1, 2**31, -(2**31), 2**53 - 1, 2**53, 2**53 + 1, 2**63 - 1, -(2**63))
_POWERS += (2**63, 2**63 + 1, 2**64 - 2, 2**64 - 1)


@dataclass(frozen=True)
class KeyKind:
    """One MySQL column type as a row key: its column type, edge values and a strategy for more."""

    name: str
    mysql: str
    """The MySQL column definition (for people, and for tests that create the table in MySQL)."""
    column: ColumnType
    edges: tuple[Any, ...]
    """Canonical values (:mod:`airflow_mysql_cdc.engine.mysql.normalise`) every workload uses."""
    values: st.SearchStrategy[Any]


def _integer(name: str, bits: int, unsigned: bool) -> KeyKind:
    low, high = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    edges = tuple(
        sorted({value for value in (*_POWERS, low, low + 1, high, high - 1) if low <= value <= high})
    )
    kind = "uint" if unsigned else "int"
    return KeyKind(
        f"{name}{' unsigned' if unsigned else ''}",
        f"{name.upper()}{' UNSIGNED' if unsigned else ''}",
        ColumnType("k", kind, bits=24 if name == "mediumint" else bits),
        edges,
        st.integers(low, high),
    )


def _decimal(precision: int, scale: int) -> KeyKind:
    def fixed(whole: int) -> decimal.Decimal:  # exact: never through the 28-digit default context
        return D(whole).scaleb(-scale, decimal.Context(prec=100))

    largest = 10**precision - 1
    wholes = {0, 1, -1, 10**scale, -(10**scale), largest, -largest, largest - 1, -largest + 1}
    for power in (2**31, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1):
        wholes |= {whole for whole in (power, power * 10**scale) if whole <= largest}
        wholes |= {-whole for whole in (power, power * 10**scale) if whole <= largest}
    return KeyKind(
        f"decimal({precision},{scale})",
        f"DECIMAL({precision},{scale})",
        ColumnType("k", "decimal", precision=precision, scale=scale),
        tuple(fixed(whole) for whole in sorted(wholes)),
        st.integers(-largest, largest).map(fixed),
    )


_TEXT_EDGES = (
    "", "a", "A", "b", "á", "à", "a ", " a", "e", "é", "É", "ß", "ss", "ÿ", "日本", "語", "😀", "\x7f",
    "z" * 64, "z" * 65, "z" * 64 + "a", "é" * 70, "日" * 100, "~",
)  # fmt: skip
_BINARY_EDGES = (
    b"",
    b"\x00",
    b"\x00\x00",
    b"a",
    b"a\x00",
    b"a\x00\x00",
    b"\x7f",
    b"\x80",
    b"\xff",
    b"\xff" * 70,
)
_TIMES = (
    datetime.time(0, 0), datetime.time(0, 0, 0, 1), datetime.time(0, 0, 0, 999), datetime.time(0, 0, 0, 1000),
    datetime.time(12, 30, 15, 999_999), datetime.time(23, 59, 59, 999_999),
)  # fmt: skip
_DAYS = (datetime.date(1970, 1, 1), datetime.date(1969, 12, 31), datetime.date(2026, 11, 28))


def _datetimes(first: datetime.datetime, last: datetime.datetime) -> st.SearchStrategy[datetime.datetime]:
    return st.datetimes(first, last)


_TIMESTAMP_FIRST = datetime.datetime(1970, 1, 1, 0, 0, 1)
_TIMESTAMP_LAST = datetime.datetime(2038, 1, 19, 3, 14, 7, 999_999)
_TIME_LIMIT = datetime.timedelta(hours=838, minutes=59, seconds=59)
_ENUM_MEMBERS = ("", "a", "A", "é", "e", "日本", "z" * 70, "small", "medium", "large")

KEY_KINDS: tuple[KeyKind, ...] = (
    *(
        _integer(name, bits, unsigned)
        for name, bits in (("tinyint", 8), ("smallint", 16), ("mediumint", 24), ("int", 32), ("bigint", 64))
        for unsigned in (False, True)
    ),
    _decimal(5, 2),
    _decimal(10, 0),
    _decimal(15, 5),
    _decimal(16, 0),
    _decimal(18, 2),
    _decimal(20, 0),
    _decimal(38, 0),
    _decimal(38, 10),
    _decimal(65, 30),
    KeyKind(
        "varchar",
        "VARCHAR(200) COLLATE utf8mb4_bin",
        ColumnType("k", "text"),
        _TEXT_EDGES,
        st.text(max_size=80),
    ),
    KeyKind(
        "char",
        "CHAR(100) COLLATE utf8mb4_0900_ai_ci",
        ColumnType("k", "text"),
        tuple(value for value in _TEXT_EDGES if not value.endswith(" ")),
        st.text(max_size=100).map(lambda text: text.rstrip(" ")),
    ),
    KeyKind("varbinary", "VARBINARY(200)", ColumnType("k", "binary"), _BINARY_EDGES, st.binary(max_size=80)),
    KeyKind(
        "binary",
        "BINARY(4)",
        ColumnType("k", "binary", fixed_length=4),
        tuple(value.ljust(4, b"\x00")[:4] for value in _BINARY_EDGES),
        st.binary(min_size=4, max_size=4),
    ),
    KeyKind(
        "date",
        "DATE",
        ColumnType("k", "date"),
        (datetime.date(1000, 1, 1), datetime.date(9999, 12, 31), *_DAYS, datetime.date(2000, 2, 29)),
        st.dates(datetime.date(1000, 1, 1), datetime.date(9999, 12, 31)),
    ),
    KeyKind(
        "datetime(6)",
        "DATETIME(6)",
        ColumnType("k", "datetime", fsp=6),
        (
            datetime.datetime(1000, 1, 1),
            datetime.datetime(9999, 12, 31, 23, 59, 59, 999_999),
            datetime.datetime(4920, 10, 27, 5, 41, 36, 1957),  # delta-rs's reader missed it by its statistics
            *(datetime.datetime.combine(day, time) for day in _DAYS for time in _TIMES),
        ),
        _datetimes(datetime.datetime(1000, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59, 999_999)),
    ),
    KeyKind(
        "timestamp(6)",
        "TIMESTAMP(6)",
        ColumnType("k", "timestamp", fsp=6),
        (
            _TIMESTAMP_FIRST,
            _TIMESTAMP_LAST,
            *(datetime.datetime.combine(datetime.date(2026, 11, 28), time) for time in _TIMES),
        ),
        _datetimes(_TIMESTAMP_FIRST, _TIMESTAMP_LAST),
    ),
    KeyKind(
        "time(6)",
        "TIME(6)",
        ColumnType("k", "time", fsp=6),
        (
            -_TIME_LIMIT,
            _TIME_LIMIT,
            datetime.timedelta(0),
            datetime.timedelta(microseconds=1),
            datetime.timedelta(microseconds=-1),
            datetime.timedelta(hours=-1, microseconds=999),
            datetime.timedelta(hours=24),
        ),
        st.timedeltas(-_TIME_LIMIT, _TIME_LIMIT),
    ),
    KeyKind("year", "YEAR", ColumnType("k", "year"), (0, 1901, 1970, 2000, 2155), st.integers(1901, 2155)),
    KeyKind(
        "enum",
        "ENUM(...)",
        ColumnType("k", "enum", members=_ENUM_MEMBERS),
        _ENUM_MEMBERS,
        st.sampled_from(_ENUM_MEMBERS),
    ),
    KeyKind(
        "bit(64)",
        "BIT(64)",
        ColumnType("k", "bit", bits=64),
        (0, 1, 2**63 - 1, 2**63, 2**64 - 1),
        st.integers(0, 2**64 - 1),
    ),
)
KINDS_BY_NAME = {kind.name: kind for kind in KEY_KINDS}


@dataclass(frozen=True)
class KeyShape:
    """A row key of one or more kinds (a composite key mixes them), and the table it keys."""

    name: str
    kinds: tuple[KeyKind, ...]

    @property
    def key_columns(self) -> tuple[ColumnType, ...]:
        return tuple(
            ColumnType(f"k{index}", kind.column.kind, kind.column.bits, kind.column.precision,
                       kind.column.scale, kind.column.fsp, kind.column.fixed_length, kind.column.members)
            for index, kind in enumerate(self.kinds)
        )  # fmt: skip

    @property
    def table_shape(self) -> TableShape:
        columns = (*self.key_columns, ColumnType("v", "int", bits=64))
        return TableShape("db", "t", columns, tuple(column.name for column in self.key_columns))

    def edge_keys(self) -> list[tuple[Any, ...]]:
        """Every edge value of every column; composite keys pair them cyclically (all appear)."""
        longest = max(len(kind.edges) for kind in self.kinds)
        return list(dict.fromkeys(
            tuple(kind.edges[index % len(kind.edges)] for kind in self.kinds) for index in range(longest)
        ))  # fmt: skip

    def keys(self) -> st.SearchStrategy[tuple[Any, ...]]:
        return st.tuples(*(st.one_of(st.sampled_from(kind.edges), kind.values) for kind in self.kinds))


SINGLE_KEYS = tuple(KeyShape(kind.name, (kind,)) for kind in KEY_KINDS)
SINGLE_KEYS_BY_NAME = {shape.name: shape for shape in SINGLE_KEYS}
COMPOSITE_KEYS = (
    KeyShape("int, varchar", (KINDS_BY_NAME["int"], KINDS_BY_NAME["varchar"])),
    KeyShape("bigint unsigned, date", (KINDS_BY_NAME["bigint unsigned"], KINDS_BY_NAME["date"])),
    KeyShape(
        "varchar, varbinary, datetime(6)",
        (KINDS_BY_NAME["char"], KINDS_BY_NAME["varbinary"], KINDS_BY_NAME["datetime(6)"]),
    ),
    KeyShape("decimal(20,0), tinyint", (KINDS_BY_NAME["decimal(20,0)"], KINDS_BY_NAME["tinyint"])),
    KeyShape(
        "enum, timestamp(6), year",
        (KINDS_BY_NAME["enum"], KINDS_BY_NAME["timestamp(6)"], KINDS_BY_NAME["year"]),
    ),
)
KEY_SHAPES = SINGLE_KEYS + COMPOSITE_KEYS


def lake_values(column: ColumnType, values: Sequence[Any]) -> list[Any]:
    """Canonical values as the lake stores them (the project's one conversion)."""
    return to_delta_array(to_arrow_array(column, list(values))).to_pylist()


# --- workloads and the reference --------------------------------------------------------------------

Key = tuple[Any, ...]


@dataclass(frozen=True)
class Step:
    """One row change: ``insert``/``update``/``delete`` of ``key``, or ``move`` of ``key`` to ``new_key``."""

    kind: str
    key: Key
    value: int
    new_key: Key | None = None


@dataclass
class Reference:
    """The table as plain Python: key -> value, every change in order, and the value each deleted key
    had when it went (what a soft delete's tombstone keeps)."""

    rows: dict[Key, int] = field(default_factory=dict)
    deleted: dict[Key, int] = field(default_factory=dict)
    changes: list[tuple[str, Key, int]] = field(default_factory=list)

    def apply(self, step: Step) -> None:
        if step.kind == "insert":
            assert step.key not in self.rows
            self._put(step.key, step.value)
            self.changes.append(("insert", step.key, step.value))
        elif step.kind == "update":
            self.rows[step.key] = step.value
            self.changes.append(("update", step.key, step.value))
        elif step.kind == "delete":
            self.deleted[step.key] = self.rows.pop(step.key)
            self.changes.append(("delete", step.key, self.deleted[step.key]))
        else:
            assert step.new_key is not None and step.new_key not in self.rows
            self.deleted[step.key] = self.rows.pop(step.key)
            self._put(step.new_key, step.value)
            self.changes.append(("update", step.new_key, step.value))

    def _put(self, key: Key, value: int) -> None:
        self.rows[key] = value
        self.deleted.pop(key, None)


def draw_batch(
    draw: Callable[..., Any], shape: KeyShape, reference: Reference, size: int, serial: Iterator[int]
) -> list[Step]:
    """Valid steps against the table as the reference has it (updated as they are drawn)."""
    steps: list[Step] = []
    for _ in range(size):
        present = sorted(reference.rows, key=repr)
        kind = draw(st.sampled_from(["insert", "update", "delete", "move"] if present else ["insert"]))
        if kind == "insert":
            key = draw(shape.keys().filter(lambda candidate: candidate not in reference.rows))
            step = Step("insert", key, next(serial))
        elif kind == "move":
            key = draw(st.sampled_from(present))
            new_key = draw(shape.keys().filter(lambda candidate: candidate not in reference.rows))
            step = Step("move", key, next(serial), new_key)
        else:
            step = Step(kind, draw(st.sampled_from(present)), next(serial))
        reference.apply(step)
        steps.append(step)
    return steps


def transactions(
    shape: KeyShape, steps: Sequence[Step], before: dict[Key, int], first_gtid: int
) -> list[Transaction]:
    """The steps as binlog transactions of up to three row changes each (images of every column)."""
    table_shape = shape.table_shape
    names = [column.name for column in shape.key_columns]
    current = dict(before)

    def image(key: Key, value: int) -> dict[str, Any]:
        return {**dict(zip(names, key, strict=True)), "v": value}

    changes = []
    for step in steps:
        if step.kind == "insert":
            changes.append(RowChange(table_shape, Op.INSERT, None, image(step.key, step.value), step.key))
            current[step.key] = step.value
        elif step.kind == "update":
            old = image(step.key, current[step.key])
            changes.append(RowChange(table_shape, Op.UPDATE, old, image(step.key, step.value), step.key))
            current[step.key] = step.value
        elif step.kind == "delete":
            changes.append(
                RowChange(table_shape, Op.DELETE, image(step.key, current.pop(step.key)), None, step.key)
            )
        else:
            assert step.new_key is not None
            old = image(step.key, current.pop(step.key))
            new = image(step.new_key, step.value)
            changes.append(RowChange(table_shape, Op.UPDATE, old, new, step.new_key))
            current[step.new_key] = step.value
    grouped = [changes[start : start + 3] for start in range(0, len(changes), 3)]
    return [
        Transaction(
            Gtid(SOURCE_UUID, first_gtid + offset), BASE_US + (first_gtid + offset) * 1_000, tuple(group)
        )
        for offset, group in enumerate(grouped)
    ]


def through(number: int) -> GtidSet:
    return GtidSet.parse(f"{SOURCE_UUID}:1-{number}") if number else GtidSet()


# --- the lake -----------------------------------------------------------------------------------------


@dataclass
class Lake:
    """A lake of one table written by the project's sink; ``gtid`` is the last GTID applied."""

    root: Path
    shape: KeyShape
    soft_deletes: bool
    gtid: int = 0
    _sink: DeltaSink | None = None

    @property
    def target(self) -> str:
        return LakeLayout(str(self.root)).target("db", "t")

    @property
    def changelog(self) -> str:
        return LakeLayout(str(self.root)).changelog("db", "t")

    def __enter__(self) -> Lake:
        self._sink = DeltaSink.at(str(self.root), PIPELINE, soft_deletes=self.soft_deletes, tables=["db.t"])
        self._sink.open(through(self.gtid))
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._sink is not None
        self._sink.release()
        self._sink = None

    def apply(self, steps: Sequence[Step], before: dict[Key, int]) -> None:
        """Apply ``steps`` as one micro-batch through the open sink."""
        assert self._sink is not None, "open the lake (with lake:) first"
        batch = transactions(self.shape, steps, before, self.gtid + 1)
        if batch:
            self.gtid += len(batch)
            result = self._sink.apply(batch, through(self.gtid))
            # Every batch checks itself (engine/lake/batch_check.py): here it must always agree.
            assert not result.stopped, [stop.reason for stop in result.stopped]

    @staticmethod
    def files(path: str) -> int:
        return len(DeltaTable(path).file_uris())

    @property
    def last_merge(self) -> dict[str, Any]:
        """delta-rs's metrics of the latest MERGE into the target."""
        assert self._sink is not None and self._sink.merge_metrics, "no MERGE yet"
        return self._sink.merge_metrics[-1]

    def copy(self, root: Path) -> Lake:
        shutil.copytree(self.root, root)
        return Lake(root, self.shape, self.soft_deletes, self.gtid)

    def target_rows(self) -> list[tuple[Any, ...]]:
        """(key values, v, deleted) of every row of the target, sorted."""
        names = [column.name for column in self.shape.key_columns]
        rows = DeltaTable(self.target).to_pyarrow_table(columns=[*names, "v", DELETED_COLUMN]).to_pylist()
        return sorted((tuple(row[name] for name in names), row["v"], row[DELETED_COLUMN]) for row in rows)

    def changelog_rows(self) -> list[tuple[str, tuple[Any, ...], int]]:
        """(op, key values, v) of every changelog row, sorted; none before the changelog exists."""
        names = [column.name for column in self.shape.key_columns]
        try:
            table = DeltaTable(self.changelog)
        except TableNotFoundError:
            return []
        rows = table.to_pyarrow_table(columns=[*names, "v", OP_COLUMN]).to_pylist()
        return sorted((row[OP_COLUMN], tuple(row[name] for name in names), row["v"]) for row in rows)


def expected_target(shape: KeyShape, reference: Reference, soft_deletes: bool) -> list[tuple[Any, ...]]:
    """The reference's rows as the target must hold them (tombstones too with soft deletes)."""
    rows = [(key, value, False) for key, value in reference.rows.items()]
    if soft_deletes:
        rows += [(key, value, True) for key, value in reference.deleted.items()]
    return sorted((_lake_key(shape, key), value, deleted) for key, value, deleted in rows)


def expected_changelog(shape: KeyShape, reference: Reference) -> list[tuple[str, tuple[Any, ...], int]]:
    return sorted((op, _lake_key(shape, key), value) for op, key, value in reference.changes)


def _lake_key(shape: KeyShape, key: Key) -> tuple[Any, ...]:
    return tuple(
        lake_values(column, [value])[0] for column, value in zip(shape.key_columns, key, strict=True)
    )


# --- layouts: how the target's files came to be -----------------------------------------------------------


def initial_rows(shape: KeyShape, extra: Sequence[Key]) -> dict[Key, int]:
    keys = list(dict.fromkeys([*shape.edge_keys(), *extra]))
    return {key: number for number, key in enumerate(keys, start=1)}


def _in_key_order(shape: KeyShape, rows: dict[Key, int]) -> list[Key]:
    """Keys sorted as the lake orders them (the lake's values, not the canonical ones)."""
    return sorted(rows, key=lambda key: tuple(_sortable(value) for value in _lake_key(shape, key)))


def _sortable(value: Any) -> Any:
    return (0, value) if value is not None else (1, 0)


def _chunks(keys: Sequence[Key], parts: int) -> list[list[Key]]:
    size = max(1, -(-len(keys) // parts))
    return [list(keys[start : start + size]) for start in range(0, len(keys), size)]


def _rows_table(shape: KeyShape, keys: Sequence[Key], rows: dict[Key, int]) -> pa.Table:
    """``keys``' rows as a snapshot would write them (the project's conversion to the lake's types)."""
    data = pa.table({
        column.name: to_arrow_array(column, [key[position] for key in keys])
        for position, column in enumerate(shape.key_columns)
    } | {"v": pa.array([rows[key] for key in keys], pa.int64())})  # fmt: skip
    return snapshot_rows(shape.table_shape.columns, data)


def _appended(lake: Lake, rows: dict[Key, int], parts: int, reference: Reference) -> DeltaTable:
    """The rows appended in ``parts`` commits in random order, to a target created as the sink does."""
    table = _created_target(lake)
    for chunk in _chunks(list(rows), parts):
        write_deltalake(table, _rows_table(lake.shape, chunk, rows), mode="append")
        for key in chunk:
            reference.rows[key] = rows[key]
    return table


def _created_target(lake: Lake) -> DeltaTable:
    """The (empty) target as the sink creates it, with the table properties it gives targets."""
    from airflow_mysql_cdc.engine.lake.delta_layout import table_properties

    schema = target_schema(lake.shape.table_shape.columns)
    return DeltaTable.create(
        lake.target,
        schema=schema,
        configuration=table_properties(schema, lake.shape.table_shape.primary_key),
        raise_if_key_not_exists=False,
    )


def layout_fresh(lake: Lake, rows: dict[Key, int], reference: Reference) -> None:
    """The target made by the sink's MERGEs alone: inserts in four batches of ascending keys."""
    with lake:
        for chunk in _chunks(_in_key_order(lake.shape, rows), 4):
            steps = [Step("insert", key, rows[key]) for key in chunk]
            before = dict(reference.rows)
            for step in steps:
                reference.apply(step)
            lake.apply(steps, before)
    reference.changes.clear()


def layout_snapshot(lake: Lake, rows: dict[Key, int], reference: Reference) -> None:
    """The target made by a snapshot: four chunks in key order, each a file an executor wrote with
    the project's own statistics (:func:`~airflow_mysql_cdc.engine.lake.data_files.write_data_file`),
    committed by the driver's snapshot writer."""
    shape = lake.shape
    columns = shape.table_shape.columns
    writer = DeltaSnapshotWriter(str(lake.root), TableRef("db", "t"), columns)
    keys = _in_key_order(shape, rows)
    chunks = _chunks(keys, 4)
    plan = [Chunk(index, None, None) for index in range(len(chunks))]
    progress = writer.start(plan, shape.table_shape.primary_key)
    windows = []
    for index, chunk in enumerate(chunks):
        file = write_data_file(lake.target, _rows_table(shape, chunk, rows), None)
        windows.append(WrittenWindow(plan[index], GtidSet(), GtidSet(), len(chunk), (file,)))
    writer.commit_wave(progress, windows)
    for key in keys:
        reference.rows[key] = rows[key]


def layout_maintained(lake: Lake, rows: dict[Key, int], reference: Reference) -> None:
    """Rows written in random order, then the built-in maintenance's sorted rewrite of the target."""
    from airflow_mysql_cdc.engine.lake.maintenance.steps import sorted_rewrite

    table = _appended(lake, rows, 3, reference)
    sorted_rewrite(table, lake.shape.key_columns[0].name, 1024 * 1024)


def layout_compacted(lake: Lake, rows: dict[Key, int], reference: Reference) -> None:
    """Rows written in random order in six commits, then another writer's ``optimize.compact()``
    that joins them into files of overlapping key ranges."""
    table = _appended(lake, rows, 6, reference)
    sizes = [action["size_bytes"] for action in pa.table(table.get_add_actions(flatten=True)).to_pylist()]
    table.optimize.compact(target_size=2 * max(sizes) + 1)


def layout_legacy(lake: Lake, rows: dict[Key, int], reference: Reference) -> None:
    """A target written before the lake kept statistics only where they are exact (an upgraded
    lake): files delta-rs wrote with its statistics of every column (decimals through a float), in
    key order, in a table created with the properties of that time."""
    shape = lake.shape
    columns = shape.table_shape.columns
    DeltaTable.create(
        lake.target,
        schema=target_schema(columns),
        configuration={TARGET_FILE_SIZE_PROPERTY: str(16 * 1024 * 1024), ROW_KEY_PROPERTY: '["k0"]'},
        raise_if_key_not_exists=False,
    )
    for chunk in _chunks(_in_key_order(shape, rows), 4):
        write_deltalake(lake.target, _rows_table(shape, chunk, rows), mode="append")
        for key in chunk:
            reference.rows[key] = rows[key]


LAYOUTS: dict[str, Callable[[Lake, dict[Key, int], Reference], None]] = {
    "fresh": layout_fresh,
    "snapshot": layout_snapshot,
    "maintained": layout_maintained,
    "compacted": layout_compacted,
    "legacy": layout_legacy,
}


# --- reading back with file skipping -----------------------------------------------------------------------

_DUCKDB_TYPES = {
    pa.int8(): "TINYINT", pa.int16(): "SMALLINT", pa.int32(): "INTEGER", pa.int64(): "BIGINT",
    pa.string(): "VARCHAR", pa.binary(): "BLOB", pa.date32(): "DATE", pa.timestamp("us"): "TIMESTAMP",
    pa.timestamp("us", tz="UTC"): "TIMESTAMPTZ", pa.float32(): "FLOAT", pa.float64(): "DOUBLE",
}  # fmt: skip


def duckdb_connection() -> Any:
    """DuckDB with its Delta reader (the PyPI package of the extension: no download at run time)."""
    import duckdb

    extension = glob.glob(
        str(
            Path(__import__("duckdb_extension_delta").__file__).parent
            / "extensions"
            / "*"
            / "delta.duckdb_extension"
        )
    )
    connection = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    connection.execute(f"LOAD '{extension[0]}'")
    return connection


def duckdb_type(arrow_type: pa.DataType) -> str:
    if pa.types.is_decimal(arrow_type):
        return f"DECIMAL({arrow_type.precision},{arrow_type.scale})"
    return _DUCKDB_TYPES[arrow_type]


_READ_BACK_VALUES = 48
"""Values read back per table (the table's first rows: the edge values come first)."""


def readers_missing_rows(path: str, column: str, duckdb: Any) -> list[str]:
    """Values of ``column`` for which delta-rs (its DataFusion query engine) or DuckDB's Delta reader,
    each with its own file skipping, find fewer rows than the table holds (a file holding them was
    skipped); empty if none."""
    table = DeltaTable(path)
    arrow_type = pa.schema(table.schema().to_arrow()).field(column).type
    counts: dict[Any, int] = {}
    for value in table.to_pyarrow_table(columns=[column]).column(column).to_pylist():
        counts[value] = counts.get(value, 0) + 1
    values = [value for value in counts if value is not None][:_READ_BACK_VALUES]
    if not values:
        return []
    quoted = '"' + column.replace('"', '""') + '"'
    by_delta_rs_sql = " UNION ALL ".join(
        f"SELECT {index} AS i, count(*) AS n FROM t WHERE {quoted} = {_datafusion_literal(value, arrow_type)}"
        for index, value in enumerate(values)
    )
    found = pa.table(QueryBuilder().register("t", table).execute(by_delta_rs_sql).read_all())
    by_delta_rs = dict(zip(found.column("i").to_pylist(), found.column("n").to_pylist(), strict=True))
    cast = f"CAST(? AS {duckdb_type(arrow_type)})"
    duckdb_sql = " UNION ALL ".join(
        f"SELECT {index} AS i, count(*) AS n FROM delta_scan(?) WHERE {quoted} = {cast}"
        for index in range(len(values))
    )
    by_duckdb = dict(
        duckdb.execute(duckdb_sql, [item for value in values for item in (path, value)]).fetchall()
    )
    return [
        f"{value!r}: {counts[value]} row(s), delta-rs found {by_delta_rs[index]}, DuckDB {by_duckdb[index]}"
        for index, value in enumerate(values)
        if by_delta_rs[index] != counts[value] or by_duckdb[index] != counts[value]
    ]


def _datafusion_literal(value: Any, arrow_type: pa.DataType) -> str:
    if pa.types.is_decimal(arrow_type):
        return f"CAST('{value:f}' AS DECIMAL({arrow_type.precision},{arrow_type.scale}))"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, datetime.datetime):  # not CAST: it goes through nanoseconds (years 1677-2262)
        zone = 'Some("UTC")' if value.tzinfo else "None"
        return f"arrow_cast('{value.isoformat()}', 'Timestamp(Microsecond, {zone})')"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    return str(value)
