"""Airflow hook: spark-submit whose secrets travel in its process environment, never in its arguments.

Invariant: no secret reaches the argv of any process. Process arguments are readable by every user
of the host (``ps``, ``/proc/<pid>/cmdline``); a process environment is readable by its owner only.

How it holds:

- The secret environment (the MySQL endpoint with its password, object-store credentials) is kept
  apart from the Spark provider's ``env_vars``, which the provider turns into
  ``--conf spark.yarn.appMasterEnv.*`` / ``spark.kubernetes.driverEnv.*`` arguments for ``yarn`` and
  ``k8s://`` masters, client mode included. It goes only into the environment of the spark-submit
  process (``os.environ | environment | secret_environment``).
- Only client deploy mode runs: the driver runs in spark-submit's process tree on this worker and
  inherits that environment; executors still run on the cluster and get what they need inside the
  serialised tasks. Cluster deploy mode is refused before anything runs
  (:class:`ClusterDeployModeRefused`), and ``--deploy-mode client`` is always passed, so neither a
  ``spark-defaults.conf`` nor ``DEPLOY_MODE`` can switch to cluster mode behind the hook's back.
- spark-submit does not inherit the Airflow worker's own secrets: every connection
  (``AIRFLOW_CONN_*``), variable (``AIRFLOW_VAR_*``) and configuration value (``AIRFLOW__*``: the
  metadata database's URL, the Fernet key) is left out of its environment
  (:func:`airflow_secret_variable`); the driver needs none of them.
- A final guard checks the built command before ``Popen``: a secret in any argument (a password put
  into ``spark_conf`` by hand) is refused (:class:`SecretInArgumentsRefused`).
- Every secret is registered with Airflow's secrets masker, so an accidental log line is redacted.
- spark-submit's output reaches the task log at each line's own level (:mod:`.spark_output`).

Kubernetes without the cncf.kubernetes provider: the base class raises in ``__init__`` for any
``k8s://`` master when the provider's ``kube_client`` cannot be imported (a ``NameError`` in provider
6.3, as the optional import leaves the name undefined). The base class uses ``kube_client`` and its
``_is_kubernetes`` flag only for the driver pod of cluster mode (pod discovery in the log, polling,
deletion, the exit code read from the pod's log, ``spark.kubernetes.driverEnv``); with the driver
local none of that applies. So this hook answers ``_is_kubernetes`` with False: the provider's
Kubernetes machinery is never used and not needed, and the one thing it also did for client mode
(``--conf spark.kubernetes.namespace`` from the connection's ``namespace`` extra) is done here.

Kubernetes secret references (``spark.kubernetes.driver.secretKeyRef.*``) are not implemented: cluster
mode cannot run these applications anyway, since they read their configuration from, and write their
result to, files in this worker's temporary folder.

Every access to the provider's private members lives in this module; ``test_spark_submit.py`` asserts
they exist on the pinned provider. Guarded by ``tests/unit/airflow/hooks/test_spark_submit.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import _EXCEPTION_START_RE, SparkSubmitHook
from airflow.sdk.exceptions import AirflowException, AirflowFailException
from airflow.sdk.log import mask_secret

from airflow_mysql_cdc.engine.errors import ERROR_PREFIX, NextStep
from airflow_mysql_cdc.hooks.engine_archive import engine_archive, ships_engine
from airflow_mysql_cdc.hooks.spark_distribution import pyspark_version, spark_conf_file_mentions
from airflow_mysql_cdc.hooks.spark_output import OutputLevels, log4j_environment

CLIENT_DEPLOY_MODE = "client"
DEPLOY_MODE_CONF = "spark.submit.deployMode"
NAMESPACE_CONF = "spark.kubernetes.namespace"

# A secret shorter than this occurs in ordinary arguments by chance ("--executor-memory" holds
# "memory"), so it is refused only as a whole argument or a whole ``key=value`` value. Airflow's
# secrets masker skips secrets below the same length ([logging] min_length_masked_secret, 5).
MIN_SUBSTRING_SECRET_LENGTH = 5
MASK = "***"


class SparkSubmitRefused(AirflowFailException):
    """spark-submit would expose a secret or could not deliver it; no retry can help."""


class ClusterDeployModeRefused(SparkSubmitRefused):
    """A deploy mode other than client was asked for."""


class MasterCannotRunRefused(SparkSubmitRefused):
    """The master lacks what spark-submit needs to start on it (YARN's configuration, an image)."""


class SecretInArgumentsRefused(SparkSubmitRefused):
    """A secret value occurs in the spark-submit command line."""


class SparkSubmitFailed(AirflowException):
    """spark-submit (or the application under it) exited with a non-zero code, kept in ``returncode``.

    ``application_error`` is the application's own error line (``airflow-mysql-cdc ERROR <label>:
    <Class>: <message>``) when it printed one: the message is that line and the exit code, so the
    reason is what the Airflow UI shows, not a line buried in the task log. Without one, the message
    is the exit code and ``output_tail``, the end of spark-submit's output (masked), where the cause
    then is. The command line is never in the message: it is in the task log (INFO when spark-submit
    starts, DEBUG again when it fails); a binlog error's reason ended with all of it (issue 34).
    """

    def __init__(
        self,
        returncode: int,
        application_error: str | None = None,
        output_tail: str = "",
        next_step: NextStep | None = None,
    ) -> None:
        exited = f"spark-submit exited with code {returncode}"
        super().__init__(f"{application_error}\n{exited}" if application_error else f"{exited}.{output_tail}")
        self.returncode = returncode
        self.next_step = next_step
        """What the application's error names as the user's next step (engine/errors.py)."""
        self.application_error = application_error
        self.output_tail = output_tail


def kill_process_group(
    process: subprocess.Popen, *, grace_s: float = 10.0, reap_s: float | None = None
) -> None:
    """SIGTERM the whole group started for spark-submit (JVM and Python driver), SIGKILL stragglers.

    The Spark provider's ``on_kill`` kills only the spark-submit JVM; in client mode the Python
    driver is the JVM's child and would go on writing until it next writes to its closed output
    pipe. spark-submit runs in a new session, so its process group holds the driver too. SIGTERM
    first lets the driver commit its pending batch and exit cleanly.
    """
    group = process.pid  # start_new_session: the group id is spark-submit's pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            process.poll()  # reap spark-submit itself, or it stays in the group as a zombie
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def _secret_strings(secret_environment: Mapping[str, str], secret_values: Iterable[str]) -> frozenset[str]:
    return frozenset(value for value in (*secret_environment.values(), *secret_values) if value)


_AIRFLOW_SECRET_PREFIXES = ("AIRFLOW_CONN_", "AIRFLOW_VAR_", "AIRFLOW__")


def airflow_secret_variable(name: str) -> bool:
    """An environment variable through which Airflow itself holds secrets (connections, variables,
    its configuration); spark-submit never gets them."""
    return name.upper().startswith(_AIRFLOW_SECRET_PREFIXES)


IMAGE_CONF = "spark.kubernetes.container.image"


def _holds_secret(argument: str, secret: str) -> bool:
    if len(secret) >= MIN_SUBSTRING_SECRET_LENGTH:
        return secret in argument
    return argument == secret or argument.partition("=")[2] == secret


class MySqlCdcSparkSubmitHook(SparkSubmitHook):
    """spark-submit in client mode, with secrets only in its process environment, in its own session.

    Takes the base class's arguments (connection, conf, py_files, application_args, ...) except
    ``env_vars``, which the base class puts on the command line for some masters.

    :param environment: variables for the spark-submit process and the local driver it starts
        (``PYSPARK_PYTHON`` ...); not secret, but kept off the command line as well.
    :param secret_environment: variables holding secrets (the MySQL endpoint, object-store
        credentials); they reach the driver through the process environment only, are masked in
        logs, and any of their values in an argument makes ``submit`` refuse to run.
    :param secret_values: secrets held inside those values (the password inside the endpoint's
        JSON), refused in arguments and masked in logs the same way.
    :param ship_engine: on a master other than ``local[...]``, pass the installed package to the
        executors with ``--py-files`` (:mod:`.engine_archive`), before any ``py_files`` given.
    :param on_started: called with spark-submit's pid (its process group's id) as soon as it runs,
        before its output is read: the operator names the application in its attempt's marker.
    """

    def __init__(
        self,
        *,
        environment: Mapping[str, str] | None = None,
        secret_environment: Mapping[str, str] | None = None,
        secret_values: Iterable[str] = (),
        ship_engine: bool = True,
        on_started: Callable[[int], None] | None = None,
        **kwargs: Any,
    ) -> None:
        if "env_vars" in kwargs:
            raise TypeError(
                "MySqlCdcSparkSubmitHook takes no env_vars (the Spark provider puts them on the "
                "command line for yarn and k8s:// masters): pass environment= or secret_environment="
            )
        self._environment = dict(environment or {})
        self._on_started = on_started
        self._secret_environment = dict(secret_environment or {})
        self._secrets = _secret_strings(self._secret_environment, secret_values)
        for secret in self._secrets:
            mask_secret(secret)
        self._returncode: int | None = None
        self.application_error: str | None = None
        self.next_step: NextStep | None = None
        """The application's error line in spark-submit's output, secrets masked (see SparkSubmitFailed)."""
        # The base __init__ resolves the connection (refusing cluster mode, see _resolve_connection).
        super().__init__(**kwargs)
        if ship_engine and ships_engine(self.master):
            # Ours first: a user's py-files holding an older copy of the package never shadow it.
            shipped = [str(engine_archive()), *([self._py_files] if self._py_files else [])]
            self._py_files = ",".join(shipped)

    # The provider's Kubernetes machinery serves the driver pod of cluster mode only (see the module
    # docstring); the base class assigns this flag in __init__ and it is read as False here.
    @property
    def _is_kubernetes(self) -> bool:
        return False

    @_is_kubernetes.setter
    def _is_kubernetes(self, value: bool) -> None:
        pass

    @property
    def master(self) -> str:
        return self._connection["master"]

    @property
    def pid(self) -> int | None:
        """spark-submit's process id (also its process group id) once started."""
        return self._submit_sp.pid if self._submit_sp else None

    @property
    def returncode(self) -> int | None:
        """spark-submit's exit code: the application's in client mode; None until it exits."""
        return self._returncode

    def _resolve_connection(self) -> dict[str, Any]:
        connection = super()._resolve_connection()
        requested = {
            "the Spark connection's deploy-mode extra or the deploy_mode argument": connection["deploy_mode"],
            f"{DEPLOY_MODE_CONF} in spark_conf": self._conf.get(DEPLOY_MODE_CONF),
        }
        for source, mode in requested.items():
            if mode and str(mode).strip().lower() != CLIENT_DEPLOY_MODE:
                raise ClusterDeployModeRefused(
                    f"Deploy mode {mode!r} (from {source}) is not supported with master "
                    f"{connection['master']!r}: only client mode is. In cluster mode the driver runs on "
                    "the cluster, and the only ways the Spark provider has to give it environment "
                    "variables (spark.yarn.appMasterEnv.*, spark.kubernetes.driverEnv.*) put them on "
                    "the spark-submit command line, which every user of this host can read; the "
                    "application also reads its configuration from and writes its result to files on "
                    "this worker. Use client mode (remove the deploy mode setting, or set it to "
                    "'client'): the driver then runs on this worker and receives the MySQL credentials "
                    "through its process environment, while the executors still run on the cluster."
                )
        # Explicit, so that spark-defaults.conf or DEPLOY_MODE cannot select cluster mode.
        connection["deploy_mode"] = CLIENT_DEPLOY_MODE
        return connection

    def _build_spark_common_args(self) -> list[str]:
        arguments = super()._build_spark_common_args()
        namespace = self._connection["namespace"]
        if self.master.startswith("k8s://") and namespace and NAMESPACE_CONF not in self._conf:
            arguments += ["--conf", f"{NAMESPACE_CONF}={namespace}"]
        return arguments

    def build_command(self, application: str) -> list[str]:
        """The spark-submit command line; refuses one that holds a secret, or for a master that cannot
        start (:meth:`_refuse_a_master_that_cannot_run`)."""
        self._refuse_a_master_that_cannot_run()
        command = self._build_spark_submit_command(application)
        self._refuse_secrets_in(command)
        return command

    def _refuse_a_master_that_cannot_run(self) -> None:
        """Fail before spark-submit, and for good, where it would fail every attempt the same way.

        Each check also accepts the setting from the Spark distribution's own files
        (``$SPARK_CONF_DIR`` or ``$SPARK_HOME/conf``: ``spark-env.sh``, ``spark-defaults.conf``),
        which spark-submit reads too.
        """
        environment = self._process_environment()
        if self.master == "yarn" and not (
            environment.get("HADOOP_CONF_DIR")
            or environment.get("YARN_CONF_DIR")
            or spark_conf_file_mentions(environment, "spark-env.sh", ("HADOOP_CONF_DIR", "YARN_CONF_DIR"))
        ):
            raise MasterCannotRunRefused(
                "Master 'yarn' needs the cluster's Hadoop/YARN client configuration on this worker, and "
                "neither HADOOP_CONF_DIR nor YARN_CONF_DIR is set (spark-submit would refuse to start, "
                "on every retry). Set one of them in the Airflow worker's environment to the folder "
                "holding yarn-site.xml and core-site.xml, or in your Spark distribution's spark-env.sh."
            )
        if self.master.startswith("k8s://") and not (
            self._conf.get(IMAGE_CONF)
            or spark_conf_file_mentions(environment, "spark-defaults.conf", (IMAGE_CONF,))
        ):
            raise MasterCannotRunRefused(
                f"Master {self.master!r} runs executors as pods and needs their container image, and "
                f"{IMAGE_CONF} is not set. Set kubernetes_image in the pipeline JSON's spark object (or "
                f"{IMAGE_CONF} in spark_conf): an image with Spark {pyspark_version()} and the "
                "executor requirements (docs/deployment.md)."
            )

    def _refuse_secrets_in(self, command: list[str]) -> None:
        for position, argument in enumerate(command):
            found = [secret for secret in self._secrets if _holds_secret(argument, secret)]
            if not found:
                continue
            shown = argument
            for secret in sorted(found, key=len, reverse=True):
                shown = shown.replace(secret, MASK)
            variables = sorted(name for name, value in self._secret_environment.items() if value in found)
            what = f"the value of {', '.join(variables)}" if variables else "a secret (a password)"
            raise SecretInArgumentsRefused(
                f"Refusing to run spark-submit: its argument {position} ({shown!r}) holds {what}. "
                "Process arguments are readable by every user of this host (ps, /proc/*/cmdline). "
                "Remove the secret from spark_conf and the application arguments: the operator passes "
                "the MySQL credentials to the driver in its process environment."
            )

    def _process_environment(self) -> dict[str, str]:
        """The worker's environment less Airflow's own secrets (:func:`airflow_secret_variable`), the
        log4j2 configuration that keeps Spark's loggers at WARN unless the user has one
        (:func:`~.spark_output.log4j_environment`), then the application's variables and secrets."""
        inherited = {name: value for name, value in os.environ.items() if not airflow_secret_variable(name)}
        environment = {**inherited, **self._environment}
        return {**environment, **log4j_environment(environment, self._conf), **self._secret_environment}

    def submit(self, application: str = "", **kwargs: Any) -> None:
        """Run spark-submit in a new session and wait for it; raise SparkSubmitFailed on a non-zero exit.

        The process group is left for the caller to kill (:meth:`kill_process_group`), since the
        driver may outlive spark-submit's failure.
        """
        if kwargs:
            raise TypeError(
                f"submit() takes no Popen arguments ({', '.join(kwargs)}): the hook always starts "
                "spark-submit in a new session with its own environment"
            )
        command = self.build_command(application)
        self._returncode = None
        self.application_error = None
        self.next_step = None
        environment = self._process_environment()
        try:
            self._submit_sp = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                bufsize=-1,
                text=True,
                env=environment,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise SparkSubmitRefused(
                f"{command[0]} was not found on PATH ({environment.get('PATH', '')}). Install pyspark "
                "next to Airflow, or put a Spark distribution's bin folder on the worker's PATH, or "
                "set the Spark connection's spark-binary extra to the name your distribution uses."
            ) from None
        try:
            if self._on_started is not None:
                self._on_started(self._submit_sp.pid)
            assert self._submit_sp.stdout is not None  # opened with stdout=PIPE above
            self._process_spark_submit_log(iter(self._submit_sp.stdout))
            self._returncode = self._submit_sp.wait()
        finally:
            self._run_post_submit_commands()
        if self._returncode:
            self.log.debug("spark-submit exited with code %d: %s", self._returncode, self._mask_cmd(command))
            raise SparkSubmitFailed(
                self._returncode, self.application_error, self._submit_log_tail, self.next_step
            )

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        """spark-submit's output in the task log at each line's level (:mod:`.spark_output`), noting the
        application's error line (:attr:`application_error`). Replaces the provider's, which logs all
        at INFO and else serves only modes this hook never runs, but for the tail kept here."""
        levels = OutputLevels()
        for raw in itr:
            text = str(raw).rstrip()
            line = text.strip()
            start = line.find(ERROR_PREFIX)
            if start >= 0:
                self.application_error = self._masked(line[start:])
            self.next_step = NextStep.in_line(line) or self.next_step
            if not self._exception_anchor_seen and _EXCEPTION_START_RE.search(line):
                self._exception_anchor_seen = True
                self._last_submit_log_lines = deque(maxlen=500)  # the whole trace from here on
            self._last_submit_log_lines.append(line)
            self.log.log(levels.level_of(text), "%s", line)

    def _masked(self, text: str) -> str:
        """``text`` with every secret long enough to be found in it replaced (it goes to the UI)."""
        for secret in sorted(self._secrets, key=len, reverse=True):
            if len(secret) >= MIN_SUBSTRING_SECRET_LENGTH:
                text = text.replace(secret, MASK)
        return text

    def kill_process_group(self, *, grace_s: float = 10.0, reap_s: float | None = None) -> None:
        """Stop spark-submit and everything it started (the local driver); a no-op once they are gone."""
        process = self._submit_sp
        if process is None:
            return
        if process.poll() is None:
            self.log.warning("Stopping spark-submit (pid %d) and its children", process.pid)
        kill_process_group(process, grace_s=grace_s, reap_s=reap_s)

    def on_kill(self) -> None:
        self.kill_process_group()
        self._run_post_submit_commands()
