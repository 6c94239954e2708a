"""The verify application's configuration: which pipeline, lake and tables, and the typed settings.

Invariant: the file holds nothing secret (:mod:`~airflow_mysql_cdc.engine.lake.application_config`);
its settings are a :class:`~.settings.VerifySettings`, checked when the configuration is built (the
operator, at DAG parse) and again when the application reads it, naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from airflow_mysql_cdc.engine.errors import ConfigurationError
from airflow_mysql_cdc.engine.lake.application_config import LakeApplicationConfig
from airflow_mysql_cdc.engine.lake.storage import check_storage_options
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.engine.verify.settings import VerifySettings


class VerifyConfigError(ConfigurationError, ValueError):
    """The verify application's configuration is incomplete or wrong."""


@dataclass(frozen=True)
class VerifyConfig(LakeApplicationConfig):
    application: ClassVar[str] = "the verify application"
    config_error: ClassVar[type[Exception]] = VerifyConfigError

    pipeline_id: str
    lake_root: str
    tables: tuple[str, ...]
    settings: VerifySettings = field(default_factory=VerifySettings)
    soft_deletes: bool = False
    """The pipeline's ``soft_deletes``: a repaired extra row is flagged, not deleted."""
    storage_options: dict[str, str] = field(default_factory=dict)
    lease_s: float = 60.0
    secret_storage_options: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.tables:
            raise VerifyConfigError("tables is empty: name at least one schema.table")
        check_storage_options(self.storage_options, where=self.where())

    @classmethod
    def _typed(cls, values: JsonObject) -> VerifyConfig:
        return cls(**(values | {"settings": VerifySettings.from_dict(values.get("settings") or {})}))
