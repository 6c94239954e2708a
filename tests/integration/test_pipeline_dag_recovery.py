"""The example DAG when the source changes under it: purged binlogs, a failover to a replica."""

from __future__ import annotations

import datetime
import threading
import time
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.values.gtid import GtidSet
from tests.support.airflow import task_states, xcom_value
from tests.support.frozen_replica import FrozenReplica
from tests.support.mysql import ServerPool, execute, purge_all_binlogs, scalar
from tests.support.pipeline import (
    ALL_TASKS,
    Pipeline,
    assert_exact,
    assert_exact_at,
    checkpoint,
    finish,
    now,
    seed,
    writers_running,
    writing,
)

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("airflow_db"), pytest.mark.slow]
SHOP = "shop"


def _executed(endpoint) -> GtidSet:
    return GtidSet.parse(scalar(endpoint, "SELECT @@gtid_executed"))


def _received(replica) -> GtidSet:
    status = "performance_schema.replication_connection_status"
    return GtidSet.parse(scalar(replica, f"SELECT RECEIVED_TRANSACTION_SET FROM {status}"))


def _wait_for(condition, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_purged_binlogs_fail_clearly_or_lead_to_a_resnapshot_by_policy(
    mysql_servers: ServerPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    server = mysql_servers.start(name="dag_purge").endpoint
    replica = FrozenReplica.start(mysql_servers, server, name="dag_purge_frozen_replica")
    execute(server, f"CREATE DATABASE {SHOP}")
    shop = server.with_database(SHOP)
    seed(shop, "orders", 150)
    pipeline = Pipeline(monkeypatch, tmp_path, server, [f"{SHOP}.orders"])
    first = pipeline.run(now())
    assert task_states(first)["replicate"] == "success"
    assert_exact_at(replica, checkpoint(first), pipeline.lake, SHOP, "orders")
    finish(writing(shop, 2, 3, "orders"))
    replica.wait_until_received(_executed(server))
    purge_all_binlogs(server)

    failed = pipeline.run(now())
    states = task_states(failed)
    assert states["resumability"] == "failed"
    assert states["replicate"] == "upstream_failed"
    output = capfd.readouterr()
    assert "the server purged binlogs holding transactions that were never applied" in output.out + output.err

    # The re-snapshot policy: every table is snapshotted again (while the writer goes on) and the
    # pipeline moves onto it, ending where the new snapshot is exact.
    pipeline.configure(on_purged="resnapshot")
    with writers_running(shop, 4, "orders", pause_s=0.005):
        recovered = pipeline.run(now())
        assert task_states(recovered) == dict.fromkeys(ALL_TASKS, "success")
        assert xcom_value(recovered, "replicate", "plan")["rebase"] is True
        assert GtidSet.parse(checkpoint(recovered)["end_gtids"]) == pipeline.lake_position()
        assert_exact_at(replica, checkpoint(recovered), pipeline.lake, SHOP, "orders")
        next_run = pipeline.run(now() + datetime.timedelta(seconds=4))
        assert task_states(next_run) == dict.fromkeys(ALL_TASKS, "success")
        assert xcom_value(next_run, "replicate", "snapshot")["tables"] == []
        assert_exact_at(replica, checkpoint(next_run), pipeline.lake, SHOP, "orders")


def test_failover_to_a_lagging_replica_waits_for_it_then_continues_from_the_checkpoint(
    mysql_servers: ServerPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    primary_server = mysql_servers.start(name="dag_failover_primary")
    replica_server = mysql_servers.start(name="dag_failover_replica")
    primary, replica = primary_server.endpoint, replica_server.endpoint
    execute(
        replica,
        f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={primary_server.port}, "
        "SOURCE_USER='root', SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1",
        "START REPLICA",
    )
    execute(primary, f"CREATE DATABASE {SHOP}")
    seed(primary.with_database(SHOP), "orders", 150)
    pipeline = Pipeline(monkeypatch, tmp_path, primary, [f"{SHOP}.orders"])
    writers = writing(primary.with_database(SHOP), 2, 5, "orders")
    assert task_states(pipeline.run(now()))["replicate"] == "success"
    finish(writers)

    # The replica falls behind: it receives the primary's transactions but does not apply them.
    execute(replica, "STOP REPLICA SQL_THREAD")
    finish(writing(primary.with_database(SHOP), 2, 6, "orders"))
    second = pipeline.run(now())
    assert task_states(second) == dict.fromkeys(ALL_TASKS, "success")
    applied = GtidSet.parse(checkpoint(second)["end_gtids"])
    _wait_for(lambda: applied.issubset(_received(replica)), "the replica to receive the checkpoint")
    assert not applied.issubset(_executed(replica))

    # Failover: the primary goes away; the connection now names the replica, which is still behind.
    primary_server.stop()
    pipeline.point_at(replica)

    def promote_later() -> None:
        time.sleep(4)
        execute(replica, "START REPLICA SQL_THREAD")
        _wait_for(lambda: applied.issubset(_executed(replica)), "the replica to apply the relay log")
        execute(replica, "STOP REPLICA", "RESET REPLICA ALL")
        finish(writing(replica.with_database(SHOP), 2, 7, "orders"))

    promotion = threading.Thread(target=promote_later)
    promotion.start()
    third = pipeline.run(now() + datetime.timedelta(seconds=12))
    promotion.join()
    assert task_states(third) == dict.fromkeys(ALL_TASKS, "success")
    output = capfd.readouterr()
    assert "the server lacks transactions the lake already applied" in output.out + output.err
    record = checkpoint(third)
    assert record["start_gtids"] == str(applied)
    assert record["source"]["server_uuid"] == scalar(replica, "SELECT @@server_uuid")
    assert_exact(replica.with_database(SHOP), pipeline.lake, SHOP, "orders")

    writers = writing(replica.with_database(SHOP), 2, 8, "orders")
    fourth = pipeline.run(now() + datetime.timedelta(seconds=3))
    finish(writers)
    assert task_states(fourth) == dict.fromkeys(ALL_TASKS, "success")
    assert_exact(replica.with_database(SHOP), pipeline.lake, SHOP, "orders")
