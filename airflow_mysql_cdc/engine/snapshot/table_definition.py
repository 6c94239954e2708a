"""A table's definition during its snapshot: a DDL landing mid-snapshot restarts the snapshot cleanly.

Invariant: every chunk a snapshot commits was read with the definition (columns, types, row key) it
was planned with. MySQL's metadata lock gives one window's SELECT one table definition, so the
definition is read again *after* each window: if it is still the planned one, the window read it;
if it changed, the window is not committed and the snapshot restarts from scratch with the new
definition (a new plan and snapshot id, the table emptied: :mod:`.lake_commits`), so no chunk of the
old definition survives. A snapshot resumed in a later attempt is checked the same way against the
columns its committed chunks have. Guarded by tests/integration/test_snapshot_schema_changes.py.

The definition (:class:`~airflow_mysql_cdc.engine.mysql.definition.TableDefinition`) is compared
by the one rule (:func:`~airflow_mysql_cdc.engine.lake.table_shape.compatibility`), which must find
``SAME``, column order included. It is the one MySQL declares (``COLUMN_TYPE``, nullability,
character set and collation of every column, and the row key), not only the types the lake stores:
a ``VARCHAR`` narrowed, a ``DATETIME(6)`` made ``DATETIME`` or a column made ``NOT NULL`` change
existing values while Delta's type stays the same. The snapshot records it with its plan
(:mod:`.lake_commits`), so a later swap of the table (a migration tool's cut-over) is compared with
exactly what the lake was read with (:mod:`~airflow_mysql_cdc.engine.apply.schema_changes`).
"""

from __future__ import annotations

from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.lake.table_shape import Compatibility, Shape, Verdict, compatibility
from airflow_mysql_cdc.engine.mysql.definition import TableDefinition, read_definition
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint


class DefinitionChanged(CdcError):
    """The table's definition changed during its snapshot (the runner restarts it)."""

    def __init__(self, ref: TableRef, after: TableDefinition, verdict: Verdict) -> None:
        self.after = after
        self.verdict = verdict
        super().__init__(f"{ref} changed during its snapshot ({verdict.describe()})")


class SnapshotTableDroppedError(CdcError):
    """The table disappeared (dropped or renamed) while it was being snapshotted."""


class DefinitionUnstableError(CdcError):
    """The table's definition kept changing: every restart of its snapshot met another DDL."""


def check_unchanged(endpoint: MySqlEndpoint, ref: TableRef, planned: TableDefinition) -> None:
    """Raise :class:`DefinitionChanged` (or the table's disappearance) unless ``planned`` holds now."""
    now = read_definition(endpoint, ref)
    if now is None:
        raise SnapshotTableDroppedError(
            f"{ref} no longer exists: it was dropped or renamed while it was being snapshotted. Nothing "
            "of it was streamed yet. Remove it from the table list, or snapshot it again once it exists."
        )
    verdict = compatibility(Shape.of_definition(planned), Shape.of_definition(now))
    if verdict.reason is not Compatibility.SAME:  # every chunk is read with the planned definition
        raise DefinitionChanged(ref, now, verdict)
