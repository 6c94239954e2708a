"""MySqlCdcSparkSubmitHook: secrets reach the driver through the environment, never through argv.

spark-submit is the recorder of tests/support/spark_submit.py (no YARN, Kubernetes or standalone
cluster here); the operator runs its real submit path with real Airflow connections.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from airflow.providers.apache.spark.hooks import spark_submit as provider
from airflow.sdk.exceptions import AirflowFailException
from airflow.sdk.log import redact

from airflow_mysql_cdc.engine.apply.config import ApplyResult
from airflow_mysql_cdc.engine.lake.storage import LAKE_STORAGE_OPTIONS_VARIABLE
from airflow_mysql_cdc.engine.values.endpoint import ENVIRONMENT_VARIABLE, MySqlEndpoint
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.hooks.engine_archive import CACHE_VARIABLE
from airflow_mysql_cdc.hooks.spark_submit import (
    ClusterDeployModeRefused,
    MasterCannotRunRefused,
    MySqlCdcSparkSubmitHook,
    SecretInArgumentsRefused,
    SparkSubmitRefused,
)
from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from tests.support.airflow import connection_env
from tests.support.spark_submit import SparkSubmitRecorder

PASSWORD = "Recorder-Secret-91q"
SOURCE = MySqlEndpoint(host="127.0.0.1", port=3306, user="cdc", password=PASSWORD)
APPLY_RESULT = ApplyResult.starting("recorded", GtidSet(), GtidSet()).to_dict()
MASTERS = {
    "local[2]": {"host": "local[2]"},
    "spark://127.0.0.1:7077": {"host": "spark://127.0.0.1", "port": 7077},
    "yarn": {"host": "yarn"},
    "k8s://https://127.0.0.1:6443": {"host": "k8s://https://127.0.0.1", "port": 6443},
}


@pytest.fixture
def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SparkSubmitRecorder:
    recorder = SparkSubmitRecorder(tmp_path / "spark-submit", monkeypatch)
    recorder.behave(result=APPLY_RESULT)
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", connection_env(SOURCE, server_id=6201))
    monkeypatch.setenv(CACHE_VARIABLE, str(tmp_path / "engine-archives"))
    return recorder


# One configuration folder for the module's tests, removed with the process (one per call was left
# behind in the system temp dir).
_SPARK_CONF_DIR = tempfile.TemporaryDirectory(prefix="spark-conf-")


def _use_spark_connection(monkeypatch: pytest.MonkeyPatch, master: str, **extra: str) -> None:
    """The master as a connection, with what spark-submit needs to start on it: YARN's client
    configuration, and a Kubernetes executor image from the distribution's spark-defaults.conf."""
    connection = {"conn_type": "spark", **MASTERS[master], "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_UNDER_TEST", json.dumps(connection))
    conf_dir = Path(_SPARK_CONF_DIR.name)
    (conf_dir / "spark-defaults.conf").write_text(
        "spark.kubernetes.container.image  example/spark-py:4.2.0\n"
    )
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    monkeypatch.setenv("HADOOP_CONF_DIR", str(conf_dir))


def _apply_operator(tmp_path: Path, **kwargs) -> MySqlCdcBinlogApplyOperator:
    return MySqlCdcBinlogApplyOperator(
        task_id="apply",
        mysql_cdc_conn_id="cdc_source",
        spark_conn_id="spark_under_test",
        tables="shop.orders",
        lake_root=str(tmp_path / "lake"),
        pipeline_id="recorded",
        mode="until_caught_up",
        **kwargs,
    )


@pytest.mark.parametrize("master", MASTERS)
def test_client_mode_passes_the_password_in_the_environment_and_in_no_argument(
    master: str, recorder: SparkSubmitRecorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_spark_connection(monkeypatch, master)
    assert _apply_operator(tmp_path).execute({}) == APPLY_RESULT
    [call] = recorder.calls()
    assert [argument for argument in call.argv if PASSWORD in argument] == []
    assert call.argv[call.argv.index("--master") + 1] == master
    assert call.argv[call.argv.index("--deploy-mode") + 1] == "client"
    assert not any("appMasterEnv" in argument or "driverEnv" in argument for argument in call.argv)
    assert MySqlEndpoint.from_environment(call.environment).password == PASSWORD
    assert call.environment["PYSPARK_PYTHON"] == call.environment["PYSPARK_DRIVER_PYTHON"]


@pytest.mark.parametrize("master", MASTERS)
def test_lake_credentials_from_an_aws_connection_reach_the_environment_and_no_argument(
    master: str, recorder: SparkSubmitRecorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_id, secret = "AKIARECORDEDKEY1", "Recorded/Lake+Secret-77"
    lake = {"conn_type": "aws", "login": key_id, "password": secret, "extra": {"region_name": "eu-west-1"}}
    monkeypatch.setenv("AIRFLOW_CONN_LAKE_UNDER_TEST", json.dumps(lake))
    _use_spark_connection(monkeypatch, master)
    operator = _apply_operator(tmp_path, lake_conn_id="lake_under_test")
    assert operator.execute({}) == APPLY_RESULT
    [call] = recorder.calls()
    assert [argument for argument in call.argv if secret in argument or key_id in argument] == []
    options = json.loads(call.environment[LAKE_STORAGE_OPTIONS_VARIABLE])
    assert options["AWS_SECRET_ACCESS_KEY"] == secret and options["AWS_ACCESS_KEY_ID"] == key_id


def test_kubernetes_client_mode_needs_no_kubernetes_provider_and_keeps_the_namespace(
    recorder: SparkSubmitRecorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ImportError):
        import airflow.providers.cncf.kubernetes  # noqa: F401
    _use_spark_connection(monkeypatch, "k8s://https://127.0.0.1:6443", namespace="cdc-jobs")
    _apply_operator(tmp_path).execute({})
    [call] = recorder.calls()
    assert "spark.kubernetes.namespace=cdc-jobs" in call.argv


@pytest.mark.parametrize("master", [m for m in MASTERS if not m.startswith("local")])
def test_cluster_deploy_mode_is_refused_before_spark_submit_runs(
    master: str, recorder: SparkSubmitRecorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_spark_connection(monkeypatch, master, **{"deploy-mode": "cluster"})
    with pytest.raises(ClusterDeployModeRefused) as refusal:
        _apply_operator(tmp_path).execute({})
    message = str(refusal.value)
    assert "Deploy mode 'cluster' (from the Spark connection's deploy-mode extra" in message
    assert "only client mode is" in message
    assert "every user of this host can read" in message
    assert "Use client mode" in message
    assert recorder.calls() == []


def test_cluster_deploy_mode_in_spark_conf_is_refused(
    recorder: SparkSubmitRecorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_spark_connection(monkeypatch, "yarn")
    operator = _apply_operator(tmp_path, spark_conf={"spark.submit.deployMode": "cluster"})
    with pytest.raises(ClusterDeployModeRefused, match="from spark.submit.deployMode in spark_conf"):
        operator.execute({})
    assert recorder.calls() == []


@pytest.mark.parametrize(
    "spark_conf",
    [
        {"spark.hadoop.javax.jdo.option.ConnectionPassword": PASSWORD},
        {"spark.driver.extraJavaOptions": f"-Ddb.url=mysql://cdc:{PASSWORD}@db/"},
    ],
    ids=["whole value", "inside a value"],
)
def test_a_password_in_spark_conf_is_refused_without_showing_it(
    spark_conf: dict[str, str], recorder: SparkSubmitRecorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_spark_connection(monkeypatch, "local[2]")
    with pytest.raises(SecretInArgumentsRefused) as refusal:
        _apply_operator(tmp_path, spark_conf=spark_conf).execute({})
    message = str(refusal.value)
    assert "Refusing to run spark-submit" in message
    assert "readable by every user of this host" in message
    assert "Remove the secret from spark_conf" in message
    assert PASSWORD not in message
    assert "***" in message
    assert recorder.calls() == []


def test_a_whole_secret_variable_value_in_an_argument_is_named_in_the_refusal(
    recorder: SparkSubmitRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_spark_connection(monkeypatch, "yarn")
    secret_environment = {"AWS_SECRET_ACCESS_KEY": "abc/Secret+Key"}
    hook = MySqlCdcSparkSubmitHook(
        conn_id="spark_under_test",
        conf={"spark.hadoop.fs.s3a.secret.key": "abc/Secret+Key"},
        secret_environment=secret_environment,
    )
    with pytest.raises(SecretInArgumentsRefused, match="holds the value of AWS_SECRET_ACCESS_KEY"):
        hook.submit("app.py")
    assert recorder.calls() == []


def test_a_short_secret_is_refused_only_as_a_whole_value(monkeypatch: pytest.MonkeyPatch) -> None:
    _use_spark_connection(monkeypatch, "local[2]")
    conf = {"spark.executor.memory": "1g"}
    by_chance = MySqlCdcSparkSubmitHook(conn_id="spark_under_test", conf=conf, secret_values=["mem"])
    assert "spark.executor.memory=1g" in by_chance.build_command("a.py")
    hook = MySqlCdcSparkSubmitHook(conn_id="spark_under_test", conf=conf, secret_values=["1g"])
    with pytest.raises(SecretInArgumentsRefused, match="'spark.executor.memory=\\*\\*\\*'"):
        hook.build_command("a.py")


def test_secrets_are_registered_with_the_airflow_secrets_masker(monkeypatch: pytest.MonkeyPatch) -> None:
    _use_spark_connection(monkeypatch, "local[2]")
    endpoint_json = SOURCE.to_environment()[ENVIRONMENT_VARIABLE]
    MySqlCdcSparkSubmitHook(
        conn_id="spark_under_test",
        secret_environment=SOURCE.to_environment(),
        secret_values=[PASSWORD],
    )
    assert redact(f"log line with {PASSWORD}") == "log line with ***"
    assert redact(endpoint_json) == "***"


def test_a_missing_spark_binary_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    _use_spark_connection(monkeypatch, "local[2]")
    hook = MySqlCdcSparkSubmitHook(conn_id="spark_under_test", spark_binary="spark3-submit")
    with pytest.raises(SparkSubmitRefused, match="spark3-submit was not found on PATH") as refusal:
        hook.submit("app.py")
    assert "Install pyspark next to Airflow" in str(refusal.value)


def test_env_vars_are_refused_since_the_provider_puts_them_on_the_command_line() -> None:
    with pytest.raises(TypeError, match="takes no env_vars"):
        MySqlCdcSparkSubmitHook(env_vars={"A": "b"})


def test_the_provider_members_the_hook_relies_on_exist() -> None:
    hook_class = provider.SparkSubmitHook
    for member in (
        "_resolve_connection",
        "_build_spark_common_args",
        "_build_spark_submit_command",
        "_process_spark_submit_log",
        "_run_post_submit_commands",
        "_mask_cmd",
        "_submit_log_tail",
    ):
        assert hasattr(hook_class, member), member
    source = Path(provider.__file__).read_text()
    for assignment in (
        "self._is_kubernetes = ", "self._submit_sp: ", "self._connection = ", "self._conf = ",
        "self._last_submit_log_lines: ", "self._exception_anchor_seen: ",
    ):  # fmt: skip
        assert assignment in source, assignment
    assert isinstance(provider._EXCEPTION_START_RE.pattern, str)


@pytest.mark.parametrize("master", MASTERS)
def test_a_cluster_master_gets_the_installed_engine_first_in_py_files_and_local_none(
    master: str, recorder: SparkSubmitRecorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_spark_connection(monkeypatch, master)
    _apply_operator(tmp_path, py_files="/opt/jobs/helpers.zip").execute({})
    [call] = recorder.calls()
    shipped = call.argv[call.argv.index("--py-files") + 1].split(",")
    if master.startswith("local"):
        assert shipped == ["/opt/jobs/helpers.zip"]
    else:
        archive = Path(shipped[0])
        assert archive.parent == tmp_path / "engine-archives" and archive.name.startswith(
            "airflow_mysql_cdc-"
        )
        assert shipped[1:] == ["/opt/jobs/helpers.zip"]


def test_spark_submit_inherits_none_of_the_workers_airflow_connections_variables_or_configuration(
    recorder: SparkSubmitRecorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_spark_connection(monkeypatch, "local[2]")
    monkeypatch.setenv("AIRFLOW_CONN_BILLING_DB", "postgresql://app:Sup3r-Secret@billing/db")
    monkeypatch.setenv("AIRFLOW_VAR_API_TOKEN", "tok-123456789")
    monkeypatch.setenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "postgresql://airflow:pw@meta/airflow")
    monkeypatch.setenv("AIRFLOW_MYSQL_CDC_SOMETHING", "kept")
    _apply_operator(tmp_path).execute({})
    [call] = recorder.calls()
    airflow_own = sorted(
        name for name in call.environment if name.startswith(("AIRFLOW_CONN_", "AIRFLOW_VAR_", "AIRFLOW__"))
    )
    assert airflow_own == []
    assert call.environment["AIRFLOW_MYSQL_CDC_SOMETHING"] == "kept" and "PATH" in call.environment
    assert MySqlEndpoint.from_environment(call.environment).password == PASSWORD  # the application's own


@pytest.mark.parametrize(
    ("master", "unset", "message"),
    [
        ("yarn", "HADOOP_CONF_DIR", "neither HADOOP_CONF_DIR nor YARN_CONF_DIR is set"),
        ("k8s://https://127.0.0.1:6443", "SPARK_CONF_DIR", "spark.kubernetes.container.image is not set"),
    ],
)
def test_a_master_that_cannot_start_fails_for_good_before_spark_submit_runs(
    master: str,
    unset: str,
    message: str,
    recorder: SparkSubmitRecorder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _use_spark_connection(monkeypatch, master)
    monkeypatch.delenv(unset)
    with pytest.raises(MasterCannotRunRefused, match=message) as refused:
        _apply_operator(tmp_path).execute({})
    assert isinstance(refused.value, AirflowFailException)  # no retry: every attempt would fail alike
    assert recorder.calls() == []


def test_an_executor_image_given_in_spark_conf_lets_a_kubernetes_master_run(
    recorder: SparkSubmitRecorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_spark_connection(monkeypatch, "k8s://https://127.0.0.1:6443")
    monkeypatch.delenv("SPARK_CONF_DIR")
    _apply_operator(
        tmp_path, spark_conf={"spark.kubernetes.container.image": "example/spark-py:4.2.0"}
    ).execute({})
    [call] = recorder.calls()
    assert "spark.kubernetes.container.image=example/spark-py:4.2.0" in call.argv


def test_spark_submit_output_reaches_the_task_log_at_each_lines_level_with_spark_at_warn(
    recorder: SparkSubmitRecorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    _use_spark_connection(monkeypatch, "local[2]")
    recorder.behave(
        result=APPLY_RESULT,
        stderr_lines=(
            "26/11/26 13:07:24 WARN Utils: Set SPARK_LOCAL_IP if you need to bind to another address",
            "2026-11-26 13:07:33,032 INFO airflow_mysql_cdc.apply: progress: 3 transaction(s)",
            "26/11/26 13:07:40 ERROR Executor: Exception in task 0.0",
            "\tat org.apache.spark.executor.Executor.run(Executor.scala:1)",
        ),
    )
    _apply_operator(tmp_path).execute({})
    logged = capfd.readouterr().out
    for level, line in (
        ("warning", "26/11/26 13:07:24 WARN Utils: Set SPARK_LOCAL_IP"),
        ("info", "2026-11-26 13:07:33,032 INFO airflow_mysql_cdc.apply: progress"),
        ("error", "26/11/26 13:07:40 ERROR Executor: Exception in task 0.0"),
        ("error", "at org.apache.spark.executor.Executor.run"),
    ):
        assert f"[{level:<9}] {line}" in logged, line
    [call] = recorder.calls()
    assert call.environment["LOG4J_CONFIGURATION_FILE"].endswith("log4j2-applications.properties")
