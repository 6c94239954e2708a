"""Fixtures shared by every test: real MySQL servers and an isolated Airflow home."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.support.airflow import airflow_logs_follow_the_current_stdout, migrate_airflow_db
from tests.support.frozen_replica import REPLICA_FLAGS, FrozenReplica
from tests.support.mysql import ServerPool, database_name_for, execute, shared_server_endpoint
from tests.support.object_store import ObjectStore, S3Lake, running_object_store
from tests.support.spark_cluster import SparkStandaloneCluster
from tests.support.spark_cluster import lean_executor_python as lean_executor_python_in

# Airflow reads AIRFLOW_HOME at import time: point it at a throwaway folder before any test
# imports Airflow, so tests never touch the developer's real Airflow installation. Each pytest-xdist
# worker has its own (its own SQLite metadata database), as it has its own MySQL servers.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
_AIRFLOW_HOME = Path(__file__).resolve().parent.parent / ".cache" / "airflow-home-tests" / _WORKER
_AIRFLOW_HOME.mkdir(parents=True, exist_ok=True)
os.environ["AIRFLOW_HOME"] = str(_AIRFLOW_HOME)
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(Path(__file__).resolve().parent / "dags")
# The OpenLineage provider is a dev dependency (the lineage tests): its listener stays off unless a
# test turns it on with a transport of its own (tests/support/openlineage.py).
os.environ["AIRFLOW__OPENLINEAGE__DISABLED"] = "True"
# delta-rs must never look for an instance role: that is a request off this machine.
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
# The tests' Spark applications live seconds: the JVM's optimising compiler costs them more CPU than
# it earns (a small spark-submit used 23 s of CPU with it, 14 s without, on this 2-core machine), and
# the suite is CPU-bound. Only the tests' JVMs run so; users' drivers keep the JVM's defaults.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1")
airflow_logs_follow_the_current_stdout()  # after AIRFLOW_HOME: importing Airflow reads it


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run first (in their collected order): with two workers, the long ones
    then overlap at the start instead of one of them running alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def mysql_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerPool]:
    """Starts extra MySQL servers (misconfigured ones, replicas); all are stopped after the run."""
    pool = ServerPool(base_dir=tmp_path_factory.mktemp("mysql"))
    yield pool
    pool.stop_all()


@pytest.fixture(scope="session")
def mysql_server(mysql_servers: ServerPool) -> Iterator[MySqlEndpoint]:
    """The one MySQL server of the whole run, logged in with rights to create databases."""
    yield from shared_server_endpoint(mysql_servers.base_dir, mysql_servers)


@pytest.fixture(scope="session")
def frozen_replica_server(mysql_servers: ServerPool) -> MySqlEndpoint:
    """The server the ``frozen_replica`` fixture makes a replica of the shared server, test by test."""
    return mysql_servers.start(REPLICA_FLAGS, name="frozen_replica").endpoint


@pytest.fixture
def frozen_replica(
    frozen_replica_server: MySqlEndpoint, mysql_server: MySqlEndpoint, mysql_database: MySqlEndpoint
) -> FrozenReplica:
    """A replica of the shared server, from this test's start, that stands still until frozen at a
    published end set (``FrozenReplica.freeze_at``)."""
    return FrozenReplica.follow_from_now(frozen_replica_server, mysql_server, [mysql_database.database])


@pytest.fixture
def mysql_database(mysql_server: MySqlEndpoint, request: pytest.FixtureRequest) -> Iterator[MySqlEndpoint]:
    """A fresh database for one test, dropped afterwards; the endpoint selects it."""
    name = database_name_for(request.node.name)
    execute(mysql_server, f"CREATE DATABASE `{name}`")
    yield mysql_server.with_database(name)
    execute(mysql_server, f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """An Airflow metadata database (SQLite in the test AIRFLOW_HOME), for dag.test() runs."""
    migrate_airflow_db()


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandaloneCluster]:
    """A Spark standalone master and two workers on loopback (1 core, 1 GiB each), stopped after the run."""
    cluster = SparkStandaloneCluster(tmp_path_factory.mktemp("spark-standalone")).start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def lean_executor_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python for Spark executors with only the engine's executor requirements: no Airflow, no
    deltalake, not this package (the operators ship it with --py-files)."""
    return lean_executor_python_in(tmp_path_factory.mktemp("lean-executor-venv") / "venv")


@pytest.fixture(scope="session")
def spark_local_2() -> Iterator[object]:
    """A Spark local[2] session in this (worker) process, for tests that run engine tasks on Spark
    directly; started on first use, stopped at the end of the run."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.master("local[2]").appName("airflow-mysql-cdc-tests").getOrCreate()
    yield spark
    spark.stop()


@pytest.fixture(scope="session")
def object_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStore]:
    """An S3-compatible server (moto) on loopback for the whole run, with fake unique credentials."""
    with running_object_store(tmp_path_factory.mktemp("moto")) as store:
        yield store


@pytest.fixture
def s3_lake(object_store: ObjectStore) -> S3Lake:
    """A lake location ``s3://<bucket of this test>/shop`` on the object store."""
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    object_store.create_bucket(bucket)
    return S3Lake(object_store, bucket)
