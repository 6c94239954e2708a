"""Entry point of the lake verification: ``python -m ...verify_lake --config C --result-file R``.

Runs :func:`~airflow_mysql_cdc.engine.verify.run.verify_lake` in a process of its own (the operator
starts it in its own process group, so a killed task leaves no orphan; a verification writes only
a repair's one MERGE per table and the ``_cdc/verify`` log, each one atomic commit, so a kill -9 at
any point leaves the lake exact and the retry verifies again). It reads on the driver alone, no
Spark: a first version, sized for tables a driver can hold a run of chunks of (docs/operations.md).
Credentials come only from the environment: ``AIRFLOW_MYSQL_CDC_ENDPOINT`` (MySQL) and
``AIRFLOW_MYSQL_CDC_LAKE_STORAGE_OPTIONS`` (the lake's secrets); the config file holds none.

Exit codes (set by the error's class, :mod:`airflow_mysql_cdc.engine.errors`): 0 done, whatever it
found (the result says; the operator fails the task on a difference); 2 configuration error;
3 an application holds the pipeline's lease (retry later); 4 the source has not executed the
pipeline's position (another server, a replica behind); 5 the binlog after the position cannot be
read; 1 other.
"""

from __future__ import annotations

from collections.abc import Sequence

from airflow_mysql_cdc.engine.entrypoints.common import (
    argument_parser,
    configure_logging,
    exit_hard,
    read_configuration,
    run_to_result_file,
)
from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.engine.verify.config import VerifyConfig


def run(config: VerifyConfig, endpoint: MySqlEndpoint) -> JsonObject:
    from airflow_mysql_cdc.engine.lake.state.store import LakeState
    from airflow_mysql_cdc.engine.verify.run import verify_lake

    lake = LakeState(config.lake_root, config.pipeline_id, config.lake_storage_options())
    report = verify_lake(
        lake,
        endpoint,
        config.tables,
        config.settings,
        soft_deletes=config.soft_deletes,
        lease_s=config.lease_s,
    )
    return report.to_dict()


def main(argv: Sequence[str] | None = None) -> int:
    args = argument_parser("Verify a pipeline's Delta lake against its MySQL source").parse_args(argv)
    configure_logging()
    configuration = read_configuration(VerifyConfig.from_file, args.config)
    if isinstance(configuration, ExitCode):
        return configuration
    config, endpoint = configuration
    return run_to_result_file(lambda: run(config, endpoint), args.result_file)


if __name__ == "__main__":
    exit_hard(main)
