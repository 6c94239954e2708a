"""What a Spark task carries to an executor: no MySQL password, no lake credential (pure logic; the
executors' side runs for real in the Spark integration tests)."""

from __future__ import annotations

import pickle

from airflow_mysql_cdc.engine.apply.range_reader import RangeTask
from airflow_mysql_cdc.engine.lake.data_files import DataFile
from airflow_mysql_cdc.engine.mysql.schema import TableRef
from airflow_mysql_cdc.engine.runtime import executor_secrets
from airflow_mysql_cdc.engine.runtime.executor_secrets import SecretsFile
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


def test_a_shipped_window_task_holds_no_credential_and_gets_them_back_where_it_runs() -> None:
    published: list[dict] = []

    def publish(secrets: dict) -> SecretsFile:
        published.append(secrets)
        return SecretsFile("secrets-1.json")

    [shipped] = for_executors([_task()], publish)
    wire = pickle.dumps(shipped)
    for secret in (PASSWORD, ACCESS_KEY, SECRET_KEY):
        assert secret.encode() not in wire
    assert shipped.target is not None and shipped.target.storage_options == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000"
    }
    assert published == [
        {"mysql": PASSWORD, "lake": {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}}
    ]
    # What the executor does with the file Spark fetched for it (read once per process)
    executor_secrets._READ["secrets-1.json"] = published[0]
    try:
        assert pickle.loads(wire).with_secrets() == _task()
    finally:
        executor_secrets._READ.clear()


def test_a_shipped_range_task_holds_no_password_and_gets_it_back_where_it_runs() -> None:
    task = RangeTask(ENDPOINT, ("shop.orders",), 0, "", f"{UUID}:1-10", None, 9100)
    wire = pickle.dumps(task.for_executors(lambda secrets: SecretsFile("range.json")))
    assert PASSWORD.encode() not in wire
    executor_secrets._READ["range.json"] = {"mysql": PASSWORD, "lake": {}}
    try:
        assert pickle.loads(wire).with_secrets() == task
    finally:
        executor_secrets._READ.clear()


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
