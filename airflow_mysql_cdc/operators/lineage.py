"""OpenLineage for the operators: the MySQL tables a task reads, the Delta tables it writes.

Invariant: the package imports and runs without the OpenLineage provider. Only the two methods the
provider's listener calls (``get_openlineage_facets_on_start`` / ``_on_complete``) import it, inside
their bodies, as first-party providers do; without it installed nothing calls them.

What a task read and wrote is a :class:`TaskLineage`, plain values the operator sets while it runs
(the tables, the source's host and port, rows per table from the application's result). The
datasets follow the OpenLineage naming spec (spec/Naming.md):

- a MySQL table: namespace ``mysql://{host}:{port}``, name ``{database}.{table}``;
- a Delta table on an object store: namespace ``{scheme}://{bucket}`` (``s3://lake``, ``gs://``,
  ``abfss://container@account.dfs.core.windows.net``), name the path in it without a leading ``/``;
- a Delta table on a local file system: namespace ``file``, name its absolute path.

On completion each Delta dataset carries a schema facet (the table's columns and types) and each
output an output statistics facet with the rows the run wrote to it (:func:`rows_written`: the one
place that decides which count that is). Nothing secret goes into an event: no password, no
storage option, no key value (only names, types and counts).

The schemas are read in the task's own process when the work is done (:meth:`TaskLineage.done`),
and only while OpenLineage is on, never in the facet methods: the provider's listener calls those
in a process forked from the task's, and delta-rs (its tokio runtime, started by the task's own
reads of the lake) panics in a forked child; the daily pipeline test's first run met exactly that.

Guarded by tests/unit/airflow/operators/test_lineage.py and, with the provider's file transport, by
tests/integration/test_binlog_apply_operator.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from airflow_mysql_cdc.engine.lake.layout import LakeLayout
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage

log = logging.getLogger(__name__)

StorageOptions = dict[str, str] | None


@dataclass(frozen=True)
class DatasetName:
    """An OpenLineage dataset identifier: a namespace (the data source) and a name in it."""

    namespace: str
    name: str


def mysql_dataset(host: str, port: int, table: str) -> DatasetName:
    """``schema.table`` of the server at ``host:port`` (the spec's ``mysql://{host}:{port}``)."""
    ref = TableRef.parse(table)
    return DatasetName(f"mysql://{host}:{port}", f"{ref.schema}.{ref.table}")


def location_dataset(location: str) -> DatasetName:
    """A Delta table's location (a URI or a local path) as the spec names a file or object store path."""
    parts = urlsplit(location)
    if len(parts.scheme) <= 1 or parts.scheme == "file":  # a local path (or C:\\ on Windows), or file://
        path = parts.path if parts.scheme == "file" else location
        return DatasetName("file", path.rstrip("/") or "/")
    return DatasetName(f"{parts.scheme}://{parts.netloc}", parts.path.strip("/"))


@dataclass(frozen=True)
class LakeTable:
    """One Delta table a task writes or reads: the source table it mirrors and its role."""

    source_table: str
    role: str  # "target" or "changelog"
    location: str


def lake_tables(lake_root: str, tables: Iterable[str], *, changelog: bool = True) -> list[LakeTable]:
    """The target (and changelog) Delta table of each source table, where the lake layout puts them."""
    layout = LakeLayout(lake_root)
    found = []
    for table in tables:
        ref = TableRef.parse(table)
        found.append(LakeTable(str(ref), "target", layout.target(ref.schema, ref.table)))
        if changelog:
            found.append(LakeTable(str(ref), "changelog", layout.changelog(ref.schema, ref.table)))
    return found


def rows_written(tables_record: Mapping[str, Mapping[str, Any]], table: str) -> int | None:
    """The rows a run wrote to ``table``'s lake tables, from a checkpoint record's ``tables``.

    Today the record's ``rows_applied`` (row changes applied from the binlog, which is also the
    rows appended to the changelog). One function so the count can follow the record when it
    carries rows per operation.
    """
    entry = tables_record.get(table)
    if entry is None or entry.get("rows_applied") is None:
        return None
    return int(entry["rows_applied"])


def lineage_of_record(planned: TaskLineage, record: Mapping[str, Any]) -> TaskLineage:
    """``planned``, done, with the rows a published checkpoint record says the run wrote to each table."""
    tables = record.get("tables") or {}
    return planned.done(
        {table: rows for table in tables if (rows := rows_written(tables, table)) is not None}
    )


def openlineage_on() -> bool:
    """Whether the OpenLineage provider is installed and on (its listener will ask for facets)."""
    try:
        from airflow.providers.openlineage.conf import is_disabled
    except ImportError:
        return False
    return not is_disabled()


@dataclass
class TaskLineage:
    """What one task read and wrote; the operator fills it as it learns (host at start, rows at the end).

    ``row_counts`` are per source table; None (or a table missing) means unknown, and the outputs
    then carry no statistics facet.
    """

    lake_root: str
    source: tuple[str, int] | None = None
    """The MySQL server's host and port; None: the task reads no MySQL table."""
    mysql_tables: tuple[str, ...] = ()
    lake_inputs: tuple[str, ...] = ()
    """Source tables whose lake tables the task reads (verify, maintenance)."""
    lake_outputs: tuple[str, ...] = ()
    changelog: bool = True
    """Whether the outputs include the changelog tables (the snapshot writes targets only)."""
    row_counts: dict[str, int] | None = None
    columns: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """Each lake table's columns and Delta types, by location (read by :meth:`done`)."""
    storage_options: StorageOptions = field(default=None, repr=False)
    """Every option delta-rs needs to read the tables' schemas (credentials included); stays in the
    worker's memory, never in an event."""

    def lake_tables(self) -> list[LakeTable]:
        """Every lake table the task reads or writes."""
        read = lake_tables(self.lake_root, self.lake_inputs)
        written = lake_tables(self.lake_root, self.lake_outputs, changelog=self.changelog)
        return read + [table for table in written if table not in read]

    def done(self, row_counts: dict[str, int] | None) -> TaskLineage:
        """What the task did: ``row_counts`` per source table and, while OpenLineage is on, the lake
        tables' schemas, read here in the task's process (module docstring)."""
        columns = {}
        if openlineage_on():
            from airflow_mysql_cdc.runs import lake

            for table in self.lake_tables():
                found = lake.table_columns(table.location, self.storage_options)
                if found:
                    columns[table.location] = found
        return replace(self, row_counts=row_counts, columns=columns)


def operator_lineage(lineage: TaskLineage, *, complete: bool) -> OperatorLineage:
    """The OpenLineage datasets of ``lineage`` (the provider's types: call only from the facet methods).

    ``complete``: the task has finished, so the outputs carry its row counts.
    """
    from airflow.providers.common.compat.openlineage.facet import (
        Dataset,
        OutputDataset,
        OutputStatisticsOutputDatasetFacet,
        SchemaDatasetFacet,
        SchemaDatasetFacetFields,
    )
    from airflow.providers.openlineage.extractors import OperatorLineage

    def facets(table: LakeTable, output: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        dataset_facets: dict[str, Any] = {}
        columns = lineage.columns.get(table.location)
        if columns:
            dataset_facets["schema"] = SchemaDatasetFacet(
                fields=[SchemaDatasetFacetFields(name=name, type=type_) for name, type_ in columns]
            )
        output_facets: dict[str, Any] = {}
        counts = lineage.row_counts
        if output and complete and counts is not None and table.source_table in counts:
            output_facets["outputStatistics"] = OutputStatisticsOutputDatasetFacet(
                rowCount=counts[table.source_table]
            )
        return dataset_facets, output_facets

    inputs = []
    if lineage.source is not None:
        host, port = lineage.source
        for source_table in lineage.mysql_tables:
            name = mysql_dataset(host, port, source_table)
            inputs.append(Dataset(namespace=name.namespace, name=name.name))
    for table in lake_tables(lineage.lake_root, lineage.lake_inputs):
        name = location_dataset(table.location)
        inputs.append(Dataset(namespace=name.namespace, name=name.name, facets=facets(table, False)[0]))
    outputs = []
    for table in lake_tables(lineage.lake_root, lineage.lake_outputs, changelog=lineage.changelog):
        name = location_dataset(table.location)
        dataset_facets, output_facets = facets(table, True)
        outputs.append(
            OutputDataset(
                namespace=name.namespace, name=name.name, facets=dataset_facets, outputFacets=output_facets
            )
        )
    return OperatorLineage(inputs=inputs, outputs=outputs)


class OpenLineageMixin:
    """The OpenLineage facet methods of an operator that sets ``self.lineage`` while it runs.

    ``planned_lineage`` says what the task will read and write before it runs (for the START
    event); ``execute`` replaces ``self.lineage`` with what it did, row counts included.
    """

    lineage: TaskLineage | None = None

    def planned_lineage(self) -> TaskLineage | None:
        """What the task is to read and write, from its (rendered) arguments; None: nothing."""
        return None

    def source_to_lake_lineage(self, tables: tuple[str, ...], *, changelog: bool = True) -> TaskLineage:
        """``tables`` read from the operator's MySQL source and written to its lake (their target
        tables, and their changelogs unless ``changelog`` is False): the replicate, binlog-apply and
        snapshot operators' plan, from their ``mysql_cdc_conn_id``, ``lake_root``, ``lake_conn_id``
        and ``storage_options``."""
        operator: Any = self
        endpoint = MySqlCdcHook(operator.mysql_cdc_conn_id).get_endpoint()
        return TaskLineage(
            lake_root=operator.lake_root,
            source=(endpoint.host, endpoint.port),
            mysql_tables=tables,
            lake_outputs=tables,
            changelog=changelog,
            storage_options=operator.delta_storage_options(),  # operators/lake_target.py
        )

    def get_openlineage_facets_on_start(self) -> OperatorLineage | None:
        planned = self.lineage or self.planned_lineage()
        return operator_lineage(planned, complete=False) if planned is not None else None

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> OperatorLineage | None:
        done = self.lineage or self.planned_lineage()
        return operator_lineage(done, complete=self.lineage is not None) if done is not None else None
