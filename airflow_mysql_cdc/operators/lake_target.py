"""The lake arguments every operator of the package takes, written once.

Invariant: ``storage_options`` holds no credential (refused when the DAG is parsed, naming the key,
by :func:`~airflow_mysql_cdc.engine.lake.storage.check_storage_options`); the lake's credentials
come only from the ``lake_conn_id`` connection, read when the task runs, and never leave this
process but in an application's environment. Five operators took and checked these arguments in
five copies of the same block; a sixth rule now has one place to go.
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_mysql_cdc.engine.lake.storage import check_storage_options
from airflow_mysql_cdc.hooks.lake_storage import LakeStorageHook


class LakeTarget:
    """Mixin for an operator reading or writing a pipeline's lake.

    Attributes (templated where the operator lists them): ``lake_root``, ``storage_options`` (public
    delta-rs options) and ``lake_conn_id`` (an ``aws`` connection with the credentials).
    """

    lake_root: str
    storage_options: dict[str, str]
    lake_conn_id: str | None

    def take_lake_arguments(
        self,
        lake_root: str,
        storage_options: Mapping[str, str] | None,
        lake_conn_id: str | None,
    ) -> None:
        """Keep the arguments; a credential in ``storage_options`` fails the DAG's parse."""
        self.lake_root = lake_root
        self.storage_options = check_storage_options(storage_options, where="the operator's storage_options")
        self.lake_conn_id = lake_conn_id

    def lake_hook(self) -> LakeStorageHook:
        return LakeStorageHook(self.lake_conn_id)

    def delta_storage_options(self) -> dict[str, str] | None:
        """Every option delta-rs needs to open the lake in this (the worker's) process."""
        return self.lake_hook().get_delta_storage_options(self.storage_options)
