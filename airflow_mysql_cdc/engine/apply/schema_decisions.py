"""What one DDL statement does to one tracked table: evolve, truncate, leave, re-snapshot or nothing.

Invariant: a table *evolves in place* only when the statement says exactly what MySQL did to the rows
that existed before it: columns added with NULL or a literal default (given to existing rows),
columns dropped (kept in the lake, NULL from then on), or nothing at all (indexes, table options,
defaults for new rows only). Every other change (a column retyped, renamed or re-keyed, a default
MySQL computes, a statement the parser does not recognise whose columns differ from the lake's)
re-snapshots the table, because its effect on existing rows is not in the binlog. The parser
(:mod:`~airflow_mysql_cdc.engine.mysql.ddl`) reads what the statement does; the columns of the rows
that follow are checked against the lake again when they arrive (:mod:`.schema_changes`), so a
statement read wrongly leads to a re-snapshot, never to rows of the wrong shape.

Guarded by tests/unit/apply/test_schema_decisions.py and, end to end, by
tests/integration/test_schema_changes.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import pyarrow as pa

from airflow_mysql_cdc.engine.lake.delta_layout import source_columns_schema
from airflow_mysql_cdc.engine.lake.evolution import AddedColumn, TableEvolution
from airflow_mysql_cdc.engine.lake.table_shape import fits_lake
from airflow_mysql_cdc.engine.mysql import ddl as parsed
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.mysql.types import ColumnType

CurrentColumns = Callable[[TableRef], "tuple[ColumnType, ...] | None"]
"""The table's columns in ``information_schema`` now (None: the table does not exist)."""
RowKey = Callable[[TableRef], "tuple[str, ...] | None"]
"""The primary key the lake table is merged by (() for none, None: not known)."""
Redeclared = Callable[[TableRef], "str | None"]
"""How the table's declared definition now differs from the one its lake rows were read with
(``COLUMN_TYPE``, nullability, character set, collation, row key); None: it does not."""

_AUTO_INCREMENT_COLUMN = re.compile(r"\bAUTO_INCREMENT\b(?!\s*=)", re.I)
_NO_EFFECT = (parsed.IndexOnly, parsed.DefaultChange, parsed.TableOption)


def decide(
    table: str,
    statement: parsed.Ddl,
    statement_text: str,
    lake_fields: Mapping[str, pa.DataType] | None,
    current_columns: CurrentColumns,
    row_key: RowKey = lambda ref: None,
    redeclared: Redeclared = lambda ref: None,
) -> TableEvolution | None:
    """What ``statement`` does to ``table`` (None: it does not touch it, a name matched by chance).

    ``lake_fields`` are the target's source columns (None: no target table yet); ``row_key`` its
    primary key (a unique key may be the row key of a table without one, and dropping a key column
    changes the key: both re-snapshot).
    """
    ref = TableRef.parse(table)
    if isinstance(statement, parsed.AlterTable):
        if _same(statement.table, ref):
            return _alter(table, statement, statement_text, lake_fields, row_key(ref))
        unknown = [action for action in statement.actions if isinstance(action, parsed.OtherChange)]
        if not unknown:
            return None  # a certain ALTER of another table: the name matched by chance
        # A clause the parser does not know may name this table and change its rows without row
        # events (EXCHANGE PARTITION p WITH TABLE <this one>): its rows are unknown from here.
        return TableEvolution(
            table,
            "resnapshot",
            f"named in an ALTER TABLE of {statement.table} whose clause {unknown[0].text!r} may change its "
            "rows without row events",
        )
    if isinstance(statement, parsed.RenameTables):
        return _rename(table, ref, statement, lake_fields, current_columns, redeclared)
    if isinstance(statement, parsed.TruncateTable):
        return TableEvolution(table, "truncate", "TRUNCATE TABLE") if _same(statement.table, ref) else None
    if isinstance(statement, parsed.DropTables):
        if statement.temporary or not any(_same(dropped, ref) for dropped in statement.tables):
            return None
        return TableEvolution(table, "leave", "the table was dropped (DROP TABLE)")
    if isinstance(statement, parsed.DropDatabase):
        if statement.schema.lower() != ref.schema.lower():
            return None
        return TableEvolution(table, "leave", f"its database {statement.schema} was dropped (DROP DATABASE)")
    if isinstance(statement, parsed.CreateTable):
        return None
    if isinstance(statement, parsed.IndexChange):
        if not _same(statement.table, ref):
            return None
        if statement.may_change_row_key and not row_key(ref):
            return TableEvolution(
                table, "resnapshot", "a unique key changed on a table without a primary key"
            )
        return TableEvolution(table, "unchanged", "index only")
    reason = statement.reason if isinstance(statement, parsed.Unparsed) else type(statement).__name__
    what = f"statement not recognised ({reason})"
    return compare_columns(table, ref, lake_fields, current_columns, what, redeclared)


def _same(a: TableRef, b: TableRef) -> bool:
    return a.schema.lower() == b.schema.lower() and a.table.lower() == b.table.lower()


def _alter(
    table: str,
    statement: parsed.AlterTable,
    text: str,
    lake_fields: Mapping[str, pa.DataType] | None,
    key: tuple[str, ...] | None,
) -> TableEvolution:
    added: list[AddedColumn] = []
    dropped: list[str] = []
    for action in statement.actions:
        if isinstance(action, parsed.RenameTo):
            return TableEvolution(
                table, "leave", f"the table was renamed to {action.table} (ALTER TABLE ... RENAME)"
            )
    for action in statement.actions:
        if isinstance(action, parsed.IndexOnly) and action.may_change_row_key and not key:
            return TableEvolution(
                table, "resnapshot", "a unique key changed on a table without a primary key"
            )
        if isinstance(action, _NO_EFFECT):
            continue
        if isinstance(action, parsed.DropColumn):
            if key and action.name.lower() in {column.lower() for column in key}:
                return TableEvolution(
                    table, "resnapshot", f"DROP COLUMN {action.name} changes the primary key"
                )
            dropped.append(action.name)
            continue
        if not isinstance(action, parsed.AddColumn):
            return _resnapshot(table, action)
        if _AUTO_INCREMENT_COLUMN.search(text):
            return TableEvolution(table, "resnapshot", f"ADD COLUMN {action.name} numbers existing rows")
        default = action.existing_rows_default
        if not isinstance(default, parsed.LiteralDefault):
            return TableEvolution(
                table,
                "resnapshot",
                f"ADD COLUMN {action.name} gives existing rows a value computed by MySQL "
                f"({getattr(default, 'text', 'not a literal')}), which the binlog does not carry",
            )
        kept = (lake_fields or {}).get(action.name)
        wanted = source_columns_schema((action.column_type,))[0].type
        if kept is not None and kept != wanted:
            return TableEvolution(
                table,
                "resnapshot",
                f"ADD COLUMN {action.name} ({wanted}) where the lake keeps a dropped column of that name "
                f"typed {kept}",
            )
        added.append(AddedColumn(action.column_type, default.value))
    if not added and not dropped:
        return TableEvolution(table, "unchanged", "no column changed (indexes, options or defaults only)")
    words = [f"added {', '.join(a.column.name for a in added)}" if added else ""]
    words.append(f"dropped {', '.join(dropped)} (kept in the lake, NULL from here on)" if dropped else "")
    return TableEvolution.evolving(table, "; ".join(w for w in words if w), tuple(added), tuple(dropped))


def _resnapshot(table: str, action: object) -> TableEvolution:
    what = {
        "ModifyColumn": "a column's type or attributes changed (MODIFY)",
        "ChangeColumn": "a column changed (CHANGE)",
        "RenameColumn": "a column was renamed",
        "PrimaryKeyChange": "the primary key changed",
    }.get(type(action).__name__, f"a change whose effect on existing rows is not in the binlog ({action})")
    return TableEvolution(table, "resnapshot", what)


def _rename(
    table: str,
    ref: TableRef,
    statement: parsed.RenameTables,
    lake_fields: Mapping[str, pa.DataType] | None,
    current_columns: CurrentColumns,
    redeclared: Redeclared,
) -> TableEvolution | None:
    """RENAME TABLE: moved away (leaves), or swapped for another table (gh-ost, pt-osc cut-over)."""
    away = [new for old, new in statement.pairs if _same(old, ref)]
    into = [old for old, new in statement.pairs if _same(new, ref)]
    if not away and not into:
        return None
    if away and not into:
        return TableEvolution(table, "leave", f"the table was renamed to {away[-1]} (RENAME TABLE)")
    if not away:
        return TableEvolution(table, "resnapshot", f"table {into[-1]} was renamed into its name")
    return compare_columns(
        table,
        ref,
        lake_fields,
        current_columns,
        f"swapped for {into[-1]} (RENAME TABLE, a migration's cut-over)",
        redeclared,
    )


def compare_columns(
    table: str,
    ref: TableRef,
    lake_fields: Mapping[str, pa.DataType] | None,
    current_columns: CurrentColumns,
    what: str,
    redeclared: Redeclared = lambda ref: None,
) -> TableEvolution:
    """Nothing to do if the table is declared as when its lake rows were read; otherwise a re-snapshot.

    The Delta types alone are not enough: a migration tool's copy of a ``VARCHAR(10)`` holds
    truncated values, of a ``DATETIME`` rounded ones, of a ``NOT NULL`` column defaults for NULL,
    all under the same Delta type (``redeclared`` compares the declarations).
    """
    columns = current_columns(ref)
    if columns is None:
        return TableEvolution(table, "leave", f"{what}; the table no longer exists")
    if lake_fields is None or not fits_lake(columns, lake_fields):
        return TableEvolution(table, "resnapshot", f"{what}; its columns differ from the lake's")
    if difference := redeclared(ref):
        return TableEvolution(table, "resnapshot", f"{what}; {difference}")
    return TableEvolution(table, "unchanged", f"{what}; its columns are the lake's")
