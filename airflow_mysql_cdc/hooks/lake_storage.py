"""Airflow hook: the lake's delta-rs storage options, with credentials from an Airflow connection.

Invariant: credentials come from the connection (or, without one, from the Spark driver's own
environment or instance role) and leave this hook only as the *secret* half of the options, which
the caller keeps in memory, passes to the Spark application in an environment variable and never
returns to XCom. Every secret value is registered with Airflow's secrets masker here, so a task
log that happens to contain it shows ``***``.

Supported connection: ``aws`` (the Amazon provider's type; that provider need not be installed):
``login`` = access key id, ``password`` = secret access key, extras ``region_name``,
``endpoint_url`` (MinIO, moto, any S3-compatible store) and ``aws_session_token``; the Amazon
provider's ``aws_access_key_id`` / ``aws_secret_access_key`` extras are read too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.log import mask_secret

from airflow_mysql_cdc.engine.lake.storage import check_storage_options, split_storage_options
from airflow_mysql_cdc.hooks import lineage

SUPPORTED_CONNECTION_TYPES = ("aws",)


class LakeStorageHook(BaseHook):
    """Resolves the lake's storage options: the configured public ones plus the connection's."""

    conn_name_attr = "lake_conn_id"
    default_conn_name = "aws_default"
    hook_name = "MySQL CDC lake storage"

    def __init__(self, lake_conn_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lake_conn_id = lake_conn_id

    def get_storage_options(
        self, public_options: Mapping[str, str] | None = None
    ) -> tuple[dict[str, str], dict[str, str]]:
        """(public, secret) storage options: the configured ``public_options`` win over the
        connection's public settings; the secret ones come only from the connection."""
        configured = check_storage_options(public_options, where="the operator's storage_options")
        if not self.lake_conn_id:
            return configured, {}
        public, secret = split_storage_options(self._connection_options())
        for value in secret.values():
            mask_secret(value)
        return {**public, **configured}, secret

    def get_delta_storage_options(
        self, public_options: Mapping[str, str] | None = None
    ) -> dict[str, str] | None:
        """Every option delta-rs needs in this process (a worker reading the pipeline state)."""
        public, secret = self.get_storage_options(public_options)
        return {**public, **secret} or None

    def report_tables_written(self, locations: Iterable[str]) -> None:
        """Tell Airflow's hook lineage collector that the Delta tables at ``locations`` were written."""
        lineage.report(self, outputs=[lineage.location_uri(location) for location in locations])

    def report_tables_read(self, locations: Iterable[str]) -> None:
        """Tell Airflow's hook lineage collector that the Delta tables at ``locations`` were read."""
        lineage.report(self, inputs=[lineage.location_uri(location) for location in locations])

    def _connection_options(self) -> dict[str, str]:
        assert self.lake_conn_id is not None, "no lake connection to read"
        connection = self.get_connection(self.lake_conn_id)
        if connection.conn_type not in SUPPORTED_CONNECTION_TYPES:
            raise ValueError(
                f"lake connection {self.lake_conn_id!r} has type {connection.conn_type!r}; use an 'aws' "
                "connection (login = access key id, password = secret access key, extras region_name "
                "and endpoint_url), or leave lake_conn_id unset so the Spark driver uses its own "
                "credentials (environment variables or an instance role)"
            )
        extra = connection.extra_dejson
        options = {
            "AWS_ACCESS_KEY_ID": connection.login or extra.get("aws_access_key_id"),
            "AWS_SECRET_ACCESS_KEY": connection.password or extra.get("aws_secret_access_key"),
            "AWS_SESSION_TOKEN": extra.get("aws_session_token"),
            "AWS_REGION": extra.get("region_name"),
            "AWS_ENDPOINT_URL": extra.get("endpoint_url"),
        }
        endpoint = str(extra.get("endpoint_url") or "")
        if endpoint.startswith("http://"):
            options["AWS_ALLOW_HTTP"] = "true"  # the connection names a plain-HTTP endpoint on purpose
        return {key: str(value) for key, value in options.items() if value}
