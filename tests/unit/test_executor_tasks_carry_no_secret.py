"""What a Spark task carries to an executor: no MySQL password, no lake credential (pure logic; the
executors' side runs for real in the Spark integration tests)."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

import pytest

from airflow_mysql_cdc.engine.apply.range_reader import RangeTask
from airflow_mysql_cdc.engine.lake.data_files import DataFile
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.runtime.executor_secrets import (
    ExecutorSecrets,
    ExecutorSecretsError,
    SecretsReference,
)
from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.window_task import (
    FileTarget,
    WindowTask,
    WrittenWindow,
    decode_outcome,
    encode_outcome,
    for_executors,
)
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
PASSWORD = "Task-Secret-7Qx"
ACCESS_KEY = "AKIA-TASK-SECRET-1"
SECRET_KEY = "task-secret-key-2"
ENDPOINT = MySqlEndpoint("127.0.0.1", 3306, "cdc", PASSWORD)
LAKE_OPTIONS = {
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
    "AWS_ACCESS_KEY_ID": ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
}


def _task() -> WindowTask:
    return WindowTask(
        ENDPOINT, TableRef("shop", "orders"), (), ("id",), (), Chunk(0, None, (100,)), 9001,
        FileTarget("s3://lake/shop/orders", LAKE_OPTIONS),
    )  # fmt: skip


@dataclass
class _Broadcast:
    """What ``SparkContext.broadcast`` returns, as far as the engine uses it. A real one pickles to
    its id and its value reaches the executor apart from the job; this one pickles its value."""

    value: Any
    destroyed: bool = False

    def destroy(self) -> None:
        self.destroyed = True


class _Context:
    def __init__(self) -> None:
        self.broadcasts: list[_Broadcast] = []

    def broadcast(self, value: Any) -> _Broadcast:
        self.broadcasts.append(_Broadcast(value))
        return self.broadcasts[-1]


def _arrived_window(task: WindowTask) -> WindowTask:
    return task.with_secrets()


def _arrived_range(task: RangeTask) -> RangeTask:
    return task.with_secrets()


def test_a_shipped_window_task_holds_no_credential_and_gets_them_back_where_it_runs() -> None:
    context = _Context()
    secrets = ExecutorSecrets(context)
    shipped = for_executors([_task(), _task()], secrets.publish)
    wire = pickle.dumps(shipped[0])
    for secret in (PASSWORD, ACCESS_KEY, SECRET_KEY):
        assert secret.encode() not in wire
    assert shipped[0].target is not None and shipped[0].target.storage_options == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000"
    }
    assert [broadcast.value for broadcast in context.broadcasts] == [  # the same secrets, published once
        {"mysql": PASSWORD, "lake": {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}}
    ]
    # Where the task runs: the job's function, bound to the broadcast, gives the task its credentials.
    on_executor = pickle.loads(pickle.dumps(secrets.bind(_arrived_window)))
    assert on_executor(pickle.loads(wire)) == _task()
    secrets.withdraw()
    assert context.broadcasts[0].destroyed


def test_a_shipped_range_task_holds_no_password_and_gets_it_back_where_it_runs() -> None:
    task = RangeTask(ENDPOINT, ("shop.orders",), 0, "", f"{UUID}:1-10", None, 9100)
    secrets = ExecutorSecrets(_Context())
    wire = pickle.dumps(task.for_executors(secrets.publish))
    assert PASSWORD.encode() not in wire
    assert pickle.loads(pickle.dumps(secrets.bind(_arrived_range)))(pickle.loads(wire)) == task


def test_a_task_run_by_a_function_not_bound_to_its_secrets_says_it_is_the_engines_bug() -> None:
    unbound = for_executors([_task()], lambda secrets: SecretsReference("airflow-mysql-cdc-unknown"))[0]
    with pytest.raises(ExecutorSecretsError, match="not bound to them with ExecutorSecrets.bind"):
        pickle.loads(pickle.dumps(unbound)).with_secrets()


def test_a_written_window_crosses_to_the_driver_as_a_few_hundred_bytes() -> None:
    file = DataFile("part-00000-x-c000.zstd.parquet", 123_456, 20_000, '{"numRecords":20000}', 1)
    window = WrittenWindow(
        Chunk(3, ("a", 1), ("b", 2)),
        GtidSet.parse(f"{UUID}:1-5"),
        GtidSet.parse(f"{UUID}:1-9"),
        20_000,
        (file,),
    )
    payload = encode_outcome(window)
    assert decode_outcome(payload) == window
    assert len(payload) < 600
