"""How the credentials a Spark task needs reach the executors: a broadcast variable, never a task,
and never a file in an executor's working folder.

Invariant: no task carries a secret, and after an application ends, however it ends (a kill -9 of
its driver included), no file the application made on an executor's host holds a secret in clear
text: the copies live in the cluster manager's per-application local folders, which it deletes at
the application's end, and they are encrypted with a key that only the application's JVMs hold in
memory. Guarded by
``test_a_snapshot_whose_driver_is_killed_with_kill_9_leaves_no_credential_on_the_workers`` and
``test_snapshot_windows_run_on_standalone_executors_with_the_password_in_no_process_argv``
(``tests/integration/test_spark_standalone.py``), and the S3 DAG test's search after each run.

How: the driver has the MySQL password and the lake's secret storage options in its environment
(set by the operator, never in argv). :meth:`ExecutorSecrets.publish` broadcasts them once per
application (``SparkContext.broadcast``) and hands tasks a :class:`SecretsReference`, a random
name; :meth:`ExecutorSecrets.bind` wraps the function the tasks run in one that carries the
broadcast *handles* (a broadcast pickles to its id, so the job's closure holds no secret); on the
executor a task's :meth:`SecretsReference.read` finds the value under its name.

Where copies live (docs/deployment.md, "Secrets on a cluster", says the same to users):

- an executor's block manager, in memory, and the file PySpark hands its Python workers,
  ``blockmgr-…/…/broadcast_<n>_python``, under the local folders the cluster manager gives the
  executor: on a standalone worker ``spark-…/executor-…`` (mode 0700) below ``SPARK_LOCAL_DIRS``,
  which the worker deletes when the master says the application finished (also after its driver was
  killed: measured 1.0 to 1.7 s after the end); YARN's and Kubernetes' container folders, deleted
  with the container;
- the driver's block manager, and PySpark's file of the pickled value in the driver's Spark local
  folder (``spark-…/pyspark-…``, deleted when the application ends, by :meth:`ExecutorSecrets.withdraw`
  or the JVM's shutdown; left behind by a kill -9 of the driver).

The files are encrypted: the operators turn on Spark's local-disk encryption
(``spark.io.encryption.enabled``, :data:`~.spark_tasks.LOCAL_DISK_ENCRYPTION_CONF`) unless the
pipeline JSON turns it off, so a file a killed driver or a crashed worker leaves holds ciphertext
(the pickled value, 57 bytes, becomes 73 bytes of ciphertext) whose key died with the JVMs. The value
travels over Spark's RPC channel, in clear text unless ``spark.network.crypto.enabled``.

Why not the earlier designs (scars):

- ``SparkContext.addFile`` (until issue 34): Spark fetches an added file into the executor's working
  folder, which a standalone worker keeps as ``work/app-…/<n>/`` (logs live there) until
  ``spark.worker.cleanup.appDataTtl``, 7 days by default, and makes it executable: 8 files after
  5 applications, mode ``-rwx--x--x``, holding the password and the S3 keys (issue 34).
- Deleting the fetched copy after reading it: Spark fetches a file once per executor, but every
  Python worker of the executor (one per core, and a new one after an idle one exits) must read it;
  a "last job on every executor" cannot be placed on each executor for sure, and a killed
  application runs none, so the files of killed applications would wait for the next one.
- Encrypting the file with a key of our own: the executors need the key, and the only channel that
  leaves nothing on their disks is the task, which must carry no secret. Spark's local-disk
  encryption is that design, with the key in the JVMs' memory only.
- ``spark.executorEnv.*``: shown in the Spark UI's Environment tab and in event logs.
- Secrets in the pickled tasks (version 0.1): one copy per task, over the wire, in every task.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from airflow_mysql_cdc.engine.errors import CdcError
from airflow_mysql_cdc.engine.values.json_values import JsonObject

log = logging.getLogger("airflow_mysql_cdc.spark")

Task = TypeVar("Task")
Result = TypeVar("Result")


@dataclass(frozen=True)
class SecretsReference:
    """A task's reference to its application's secrets: a random name, no secret."""

    name: str

    def read(self) -> JsonObject:
        """The secrets, where the task runs: the broadcast its bound function brought along."""
        shared = _SHARED.get(self.name)
        if shared is None:
            raise ExecutorSecretsError(
                f"this Spark task has no secrets named {self.name}: the function it runs was not "
                "bound to them with ExecutorSecrets.bind (a bug in the engine, not a setup problem)."
            )
        return shared.value


class ExecutorSecretsError(CdcError):
    """A task found no secrets under its reference (the engine ran it without binding them)."""


_SHARED: JsonObject = {}
"""On an executor's Python worker: secrets' name -> the broadcast (anything with ``.value``)."""


@dataclass(frozen=True)
class _WithSecrets(Generic[Task, Result]):
    """``function`` with the broadcasts its tasks' references name; pickled into the job's closure."""

    function: Callable[[Task], Result]
    shared: tuple[tuple[str, Any], ...]

    def __call__(self, task: Task) -> Result:
        _SHARED.update(self.shared)
        return self.function(task)


class ExecutorSecrets:
    """The driver's side: broadcasts secrets once, binds them to the tasks' function, withdraws them."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self._published: dict[str, tuple[SecretsReference, Any]] = {}

    def publish(self, secrets: JsonObject) -> SecretsReference:
        """The reference tasks carry to read ``secrets`` (the same secrets are published once)."""
        key = json.dumps(secrets, sort_keys=True)
        known = self._published.get(key)
        if known is not None:
            return known[0]
        reference = SecretsReference(f"airflow-mysql-cdc-{uuid.uuid4().hex}")
        self._published[key] = (reference, self.context.broadcast(secrets))
        return reference

    def bind(self, function: Callable[[Task], Result]) -> Callable[[Task], Result]:
        """``function``, carrying the handles of every secret published so far (call after publishing
        for the tasks it will run)."""
        shared = tuple((reference.name, broadcast) for reference, broadcast in self._published.values())
        return _WithSecrets(function, shared)

    def withdraw(self) -> None:
        """Destroy the broadcasts on the executors and the driver (call when no task will start any
        more); the cluster manager deletes whatever a failure here leaves when the application ends."""
        for reference, broadcast in self._published.values():
            try:
                broadcast.destroy()
            except Exception as error:  # noqa: BLE001 - best effort: the application is ending anyway
                log.warning("could not destroy the broadcast secrets %s: %s", reference.name, error)
        self._published.clear()
