"""Hook-level lineage: the tables a hook's connection was used to read or write, for Airflow's
hook lineage collector (what the OpenLineage provider, or any registered hook lineage reader, sees).

Invariant: reporting never fails a task and never names a secret. The collector is Airflow's own
(``get_hook_lineage_collector``, through the common.compat provider like first-party hooks use it):
without a hook lineage reader registered it is a no-op. Assets are named by URI: a MySQL table as
``mysql://host:port/database/table`` (the MySQL provider's asset URI form), a Delta table by its
location (``s3://bucket/prefix/shop/orders``, ``file:///lake/shop/orders``).

The data itself is read and written by the applications under spark-submit, outside the worker's
process; the hooks report on their behalf once the application's result is known
(:meth:`~.mysql_cdc.MySqlCdcHook.report_tables_read`,
:meth:`~.lake_storage.LakeStorageHook.report_tables_written`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Any

from airflow_mysql_cdc.engine.mysql.schema import TableRef

log = logging.getLogger(__name__)


def mysql_table_uri(host: str, port: int, table: str) -> str:
    ref = TableRef.parse(table)
    return f"mysql://{host}:{port}/{ref.schema}/{ref.table}"


def location_uri(location: str) -> str:
    """A lake table's location as a URI: a local path becomes ``file://`` + its absolute path."""
    if "://" in location:
        return location
    return "file://" + os.path.abspath(location)


def report(hook: Any, *, inputs: Iterable[str] = (), outputs: Iterable[str] = ()) -> None:
    """Add ``inputs`` and ``outputs`` (asset URIs) to the collector, in the context of ``hook``."""
    try:
        from airflow.providers.common.compat.lineage.hook import get_hook_lineage_collector

        collector = get_hook_lineage_collector()
        for uri in inputs:
            collector.add_input_asset(context=hook, uri=uri)
        for uri in outputs:
            collector.add_output_asset(context=hook, uri=uri)
    except Exception:  # lineage must never fail the run
        log.warning("Could not report hook lineage", exc_info=True)
