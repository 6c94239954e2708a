"""Entry point of the lake maintenance: ``python -m ...maintain_lake --config C --result-file R``.

Runs :func:`~airflow_mysql_cdc.engine.lake.maintenance.run.maintain_lake` in a process of its own
(the operator starts it in its own process group, so a killed task leaves no orphan and a kill -9
of it leaves the lake whole: every step is atomic or idempotent). It needs no MySQL connection and
no Spark. The lake's secret storage options come only from ``AIRFLOW_MYSQL_CDC_LAKE_STORAGE_OPTIONS``
in the environment; the config file holds none.

Exit codes (set by the error's class, :mod:`airflow_mysql_cdc.engine.errors`): 0 done (or not due);
2 configuration error; 3 an application holds the pipeline's lease (retry later); 1 other.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from airflow_mysql_cdc.engine.entrypoints.common import (
    CONFIGURATION_FAILURES,
    argument_parser,
    configuration_exit_code,
    configure_logging,
    exit_hard,
    run_to_result_file,
)
from airflow_mysql_cdc.engine.errors import ConfigurationError
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
from airflow_mysql_cdc.engine.lake.storage import (
    check_storage_options,
    merged_storage_options,
    secret_storage_options_from_environment,
)


class MaintenanceConfigError(ConfigurationError, ValueError):
    """The maintenance application's configuration is incomplete or wrong."""


@dataclass(frozen=True)
class MaintenanceConfig:
    pipeline_id: str
    lake_root: str
    tables: tuple[str, ...]
    policy: dict[str, Any] = field(default_factory=dict)
    """The pipeline JSON's ``maintenance`` object (:class:`MaintenancePolicy`)."""
    storage_options: dict[str, str] = field(default_factory=dict)
    lease_s: float = 60.0
    force: bool = False
    """Maintain even if the last maintenance is younger than the policy's interval."""
    secret_storage_options: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.tables:
            raise MaintenanceConfigError("tables is empty: name at least one schema.table")
        MaintenancePolicy.from_dict(self.policy)
        check_storage_options(self.storage_options, where="the maintenance application's configuration")

    def to_json(self) -> str:
        public = {key: value for key, value in asdict(self).items() if key != "secret_storage_options"}
        return json.dumps(public, indent=2)

    @classmethod
    def from_file(cls, path: Path) -> MaintenanceConfig:
        data = json.loads(path.read_text())
        if "secret_storage_options" in data:
            raise MaintenanceConfigError(
                "credentials do not belong in the configuration: pass them in the environment"
            )
        data["tables"] = tuple(data.get("tables") or ())
        return cls(**data)


def run(config: MaintenanceConfig) -> dict[str, Any]:
    from airflow_mysql_cdc.engine.lake.maintenance.run import maintain_lake
    from airflow_mysql_cdc.engine.lake.state.store import LakeState

    options = merged_storage_options(config.storage_options, config.secret_storage_options)
    lake = LakeState(config.lake_root, config.pipeline_id, options)
    policy = MaintenancePolicy.from_dict(config.policy)
    return maintain_lake(lake, config.tables, policy, lease_s=config.lease_s, force=config.force).to_dict()


def main(argv: Sequence[str] | None = None) -> int:
    args = argument_parser(
        "Maintain a pipeline's Delta lake: compact, checkpoint, clean up, vacuum"
    ).parse_args(argv)
    configure_logging()
    try:
        config = MaintenanceConfig.from_file(args.config)
        config = replace(config, secret_storage_options=secret_storage_options_from_environment())
    except CONFIGURATION_FAILURES as error:
        return configuration_exit_code(error)
    return run_to_result_file(lambda: run(config), args.result_file)


if __name__ == "__main__":
    exit_hard(main)
