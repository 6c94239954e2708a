"""How the credentials a Spark task needs reach the executors: one file per application, never a task.

The driver has the MySQL password and the lake's secret storage options in its environment (set
by the operator, never in argv). Tasks are serialised and shipped to executors, so a secret inside
a task would travel, in clear unless Spark's RPC encryption is on, once per task. Instead the
driver writes the secrets once to a private file (mode 0600, in a fresh private folder), adds it to
the application with ``SparkContext.addFile``, and ships tasks that carry only the file's random
name (:class:`SecretsFile`). Each executor fetches the file from the driver once, through Spark's
authenticated file server (``spark.authenticate``; encrypted with ``spark.network.crypto.enabled``),
and a task reads it where Spark put it (``SparkFiles.get``), once per Python worker.

Where copies live: the driver's in a private folder inside the operator's work folder until the
application ends (:meth:`ExecutorSecrets.withdraw`, and the operator deletes its work folder
whatever the application's end); an executor's in its Spark working folder, which YARN and
Kubernetes delete with the container, a standalone worker with its application folder
(``spark.worker.cleanup.enabled``), and ``local[...]`` with the Spark context
(docs/deployment.md, "Secrets on a cluster").
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_mysql_cdc.engine.errors import CdcError


@dataclass(frozen=True)
class SecretsFile:
    """A task's reference to its application's secrets: the file's name, no secret."""

    name: str

    def read(self) -> dict[str, Any]:
        """The secrets, on an executor (or the driver): from the copy Spark fetched, cached per process."""
        cached = _READ.get(self.name)
        if cached is None:
            from pyspark import SparkFiles  # an executor's Python worker has pyspark on its path

            try:
                cached = json.loads(Path(SparkFiles.get(self.name)).read_text())
            except OSError as error:
                raise ExecutorSecretsError(
                    f"this Spark task could not read its application's credentials file ({self.name}): "
                    f"{error.strerror or error}. Spark fetches it from the driver when the task starts; "
                    "check that the executors reach the driver's file server (spark.driver.host, "
                    "spark.driver.port) and that spark.authenticate is the same on both sides."
                ) from None
            _READ[self.name] = cached
        return cached


class ExecutorSecretsError(CdcError):
    """An executor could not read the credentials its driver shared (a network or setup problem)."""


_READ: dict[str, dict[str, Any]] = {}


class ExecutorSecrets:
    """The driver's side: publishes secrets to the executors once, and withdraws its copy at the end."""

    def __init__(self, context: Any, folder: Path | None = None) -> None:
        """``folder``: where the private folder of the driver's copy is made (default: the system's
        temporary folder); the entry points use the operator's work folder, which the operator
        deletes when the application ends, however it ends."""
        self.context = context
        self.parent = folder
        self._folder: Path | None = None
        self._published: dict[str, SecretsFile] = {}

    def publish(self, secrets: dict[str, Any]) -> SecretsFile:
        """The reference tasks carry to read ``secrets`` (the same secrets are published once)."""
        content = json.dumps(secrets, sort_keys=True)
        known = self._published.get(content)
        if known is not None:
            return known
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="executor-secrets-", dir=self.parent))
        reference = SecretsFile(f"airflow-mysql-cdc-{uuid.uuid4().hex}.json")
        path = self._folder / reference.name
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(content)
        self.context.addFile(str(path))
        self._published[content] = reference
        return reference

    def withdraw(self) -> None:
        """Delete the driver's copies (call when no task will start any more)."""
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
        self._published.clear()
