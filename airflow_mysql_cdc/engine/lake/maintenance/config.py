"""The maintenance application's configuration: which pipeline, lake and tables, and the typed policy.

Invariant: the file holds nothing secret (:mod:`~airflow_mysql_cdc.engine.lake.application_config`);
its policy is a :class:`~.policy.MaintenancePolicy`, checked when the configuration is built (the
operator, at DAG parse) and again when the application reads it, naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from airflow_mysql_cdc.engine.errors import ConfigurationError
from airflow_mysql_cdc.engine.lake.application_config import LakeApplicationConfig
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
from airflow_mysql_cdc.engine.lake.storage import check_storage_options
from airflow_mysql_cdc.engine.values.json_values import JsonObject


class MaintenanceConfigError(ConfigurationError, ValueError):
    """The maintenance application's configuration is incomplete or wrong."""


@dataclass(frozen=True)
class MaintenanceConfig(LakeApplicationConfig):
    application: ClassVar[str] = "the maintenance application"
    config_error: ClassVar[type[Exception]] = MaintenanceConfigError

    pipeline_id: str
    lake_root: str
    tables: tuple[str, ...]
    policy: MaintenancePolicy = field(default_factory=MaintenancePolicy)
    """The pipeline JSON's ``maintenance`` object."""
    storage_options: dict[str, str] = field(default_factory=dict)
    lease_s: float = 60.0
    force: bool = False
    """Maintain even if the last maintenance is younger than the policy's interval."""
    secret_storage_options: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.tables:
            raise MaintenanceConfigError("tables is empty: name at least one schema.table")
        check_storage_options(self.storage_options, where=self.where())

    @classmethod
    def _typed(cls, values: JsonObject) -> MaintenanceConfig:
        return cls(**(values | {"policy": MaintenancePolicy.from_dict(values.get("policy"))}))
