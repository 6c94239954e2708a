"""An S3-compatible object store on loopback for the lake tests: moto in server mode.

moto's server honours conditional PUT (``If-None-Match: *``), which delta-rs 1.x commits with, so
the lake's concurrency behaves as on AWS S3. The credentials are fake but unique per run, so a test
can assert they occur nowhere they must not: task logs, XCom, process arguments, the lake itself.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import boto3

REGION = "us-east-1"


@dataclass(frozen=True)
class ObjectStore:
    """A running moto server and the (fake) credentials every client of it uses."""

    endpoint_url: str
    access_key_id: str
    secret_access_key: str

    @property
    def public_options(self) -> dict[str, str]:
        """What may stand in a configuration file: where the store is, nothing secret."""
        return {"AWS_ENDPOINT_URL": self.endpoint_url, "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true"}

    @property
    def secret_options(self) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": self.access_key_id, "AWS_SECRET_ACCESS_KEY": self.secret_access_key}

    @property
    def storage_options(self) -> dict[str, str]:
        """Everything delta-rs needs, for the tests' own reads of the lake."""
        return self.public_options | self.secret_options

    def client(self):
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name=REGION,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
        )

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def objects(self, bucket: str) -> Iterator[tuple[str, bytes]]:
        """(key, bytes) of every object in ``bucket``."""
        client = self.client()
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                yield item["Key"], client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()

    def aws_connection(self) -> str:
        """An ``AIRFLOW_CONN_*`` value: an ``aws`` connection with this store's credentials."""
        return json.dumps(
            {
                "conn_type": "aws",
                "login": self.access_key_id,
                "password": self.secret_access_key,
                "extra": {"region_name": REGION, "endpoint_url": self.endpoint_url},
            }
        )


@dataclass(frozen=True)
class S3Lake:
    """A lake location in its own bucket of the store."""

    store: ObjectStore
    bucket: str
    prefix: str = "shop"

    @property
    def root(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    @property
    def storage_options(self) -> dict[str, str]:
        return self.store.storage_options

    def objects_containing(self, *needles: str) -> list[str]:
        """Keys of the lake's objects whose bytes contain any of ``needles``."""
        encoded = [needle.encode() for needle in needles]
        return [key for key, data in self.store.objects(self.bucket) if any(n in data for n in encoded)]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_answering(port: int, process: subprocess.Popen, log: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"moto_server did not answer on 127.0.0.1:{port} within {timeout_s}s")


@contextmanager
def running_object_store(workdir: Path) -> Iterator[ObjectStore]:
    """moto_server on 127.0.0.1 at a free port, stopped on exit."""
    port = _free_port()
    log = workdir / "moto_server.log"
    server = Path(sys.executable).with_name("moto_server")
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(server), "-H", "127.0.0.1", "-p", str(port)], stdout=output, stderr=subprocess.STDOUT
        )
    try:
        _wait_until_answering(port, process, log)
        store = ObjectStore(
            endpoint_url=f"http://127.0.0.1:{port}",
            access_key_id="AKIAMOTO" + uuid.uuid4().hex[:12].upper(),
            secret_access_key="moto-secret-" + uuid.uuid4().hex,
        )
        store.client().list_buckets()  # answers S3 requests, not just TCP
        yield store
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
