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

from collections.abc import Sequence
from dataclasses import replace

from airflow_mysql_cdc.engine.entrypoints.common import (
    CONFIGURATION_FAILURES,
    argument_parser,
    configuration_exit_code,
    configure_logging,
    exit_hard,
    run_to_result_file,
)
from airflow_mysql_cdc.engine.lake.maintenance.config import MaintenanceConfig
from airflow_mysql_cdc.engine.lake.storage import secret_storage_options_from_environment
from airflow_mysql_cdc.engine.values.json_values import JsonObject


def run(config: MaintenanceConfig) -> JsonObject:
    from airflow_mysql_cdc.engine.lake.maintenance.run import maintain_lake
    from airflow_mysql_cdc.engine.lake.state.store import LakeState

    lake = LakeState(config.lake_root, config.pipeline_id, config.lake_storage_options())
    return maintain_lake(
        lake, config.tables, config.policy, lease_s=config.lease_s, force=config.force
    ).to_dict()


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
