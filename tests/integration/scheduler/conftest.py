"""The tests that need a real Airflow deployment: one per worker, started and stopped with this package.

Both modules are in one xdist group, so they run on one worker, one after the other, and share it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.airflow_deployment import AirflowDeployment
from tests.support.airflow_rest import AirflowRestClient
from tests.support.statsd import StatsdListener


@pytest.fixture(scope="package")
def airflow_statsd() -> Iterator[StatsdListener]:
    """A StatsD server on loopback that the deployment's components send their metrics to: what a
    user's StatsD would receive from the task processes (``mysql_cdc.*``, with the ``airflow``
    prefix and the legacy names, Airflow's defaults)."""
    listener = StatsdListener()
    yield listener
    listener.close()


@pytest.fixture(scope="package")
def airflow_deployment(
    tmp_path_factory: pytest.TempPathFactory, airflow_statsd: StatsdListener
) -> Iterator[AirflowDeployment]:
    """A real Airflow (scheduler, dag-processor, triggerer, api-server) on PostgreSQL, for this package.

    Started for its tests (about 20 s) and stopped with every process it started once they are done:
    idle, the deployment still used a fifth of a core, which the rest of the run needs. Tests write
    DAG files into ``airflow_deployment.dags_folder`` with unique DAG ids.
    """
    metrics = {
        "AIRFLOW__METRICS__STATSD_ON": "True",
        "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
        "AIRFLOW__METRICS__STATSD_PORT": str(airflow_statsd.port),
        "AIRFLOW__METRICS__STATSD_PREFIX": "airflow",
    }
    deployment = AirflowDeployment(tmp_path_factory.mktemp("airflow-deployment"), extra_env=metrics).start()
    yield deployment
    deployment.stop()


@pytest.fixture(scope="package")
def airflow_api(airflow_deployment: AirflowDeployment) -> Iterator[AirflowRestClient]:
    """A REST API v2 client of the shared deployment: what a user does in the UI, one method each."""
    client = airflow_deployment.client()
    yield client
    client.close()
