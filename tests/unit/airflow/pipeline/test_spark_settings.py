"""Spark is configured from the pipeline JSON alone, and a wrong setting fails the DAG's parse by name."""

from __future__ import annotations

import datetime
import sys

import pytest

from airflow_mysql_cdc.hooks.spark_defaults import driver_conf
from airflow_mysql_cdc.pipeline.config import PipelineConfig, PipelineConfigError
from airflow_mysql_cdc.pipeline.dag import build_pipeline_dag

CLUSTER = {
    "executor_python": "/opt/cdc-venv/bin/python",
    "executor_memory": "4g",
    "executor_cores": 2,
    "num_executors": 3,
    "driver_memory": "2g",
    "kubernetes_image": "registry.example/spark-py:4.2.0",
    "kubernetes_namespace": "data",
    "conf": {"spark.executor.memory": "6g", "spark.network.crypto.enabled": True},
    "py_files": ["/opt/jobs/helpers.zip"],
    "archives": "/opt/envs/cdc.tar.gz#environment",
    "execution_timeout_minutes": 90,
}


def test_every_setting_reaches_the_replicate_task_and_conf_wins_over_the_named_ones() -> None:
    dag = build_pipeline_dag(PipelineConfig(dag_id="cluster", spark=CLUSTER))
    replicate = dag.get_task("replicate")
    assert replicate.spark_conf == {
        "spark.pyspark.python": "/opt/cdc-venv/bin/python",
        "spark.executor.memory": "6g",  # conf wins
        "spark.executor.cores": "2",
        "spark.executor.instances": "3",
        "spark.driver.memory": "2g",
        "spark.kubernetes.container.image": "registry.example/spark-py:4.2.0",
        "spark.kubernetes.namespace": "data",
        "spark.network.crypto.enabled": "true",
    }
    assert replicate.py_files == "/opt/jobs/helpers.zip" and replicate.files is None
    assert replicate.archives == "/opt/envs/cdc.tar.gz#environment"
    assert replicate.execution_timeout == datetime.timedelta(minutes=90)


def test_without_spark_settings_the_task_runs_as_before() -> None:
    replicate = build_pipeline_dag(PipelineConfig(dag_id="plain")).get_task("replicate")
    assert replicate.spark_conf is None and replicate.py_files is None and replicate.execution_timeout is None


def test_the_driver_python_is_the_workers_interpreter_unless_set() -> None:
    """spark.pyspark.python alone would choose the driver's Python too, which lacks the package."""
    assert driver_conf({"spark.pyspark.python": "/opt/cdc-venv/bin/python"}) == {
        "spark.pyspark.driver.python": sys.executable,
        "spark.ui.enabled": "false",
        "spark.io.encryption.enabled": "true",
        "spark.pyspark.python": "/opt/cdc-venv/bin/python",
    }
    assert driver_conf({"spark.pyspark.driver.python": "/usr/bin/python3"})[
        "spark.pyspark.driver.python"
    ] == ("/usr/bin/python3")


def test_the_spark_ui_is_off_unless_the_pipeline_json_turns_it_on() -> None:
    """Spark's UI would listen on every interface of the Airflow worker, unauthenticated."""
    assert driver_conf(None)["spark.ui.enabled"] == "false"
    assert driver_conf({"spark.ui.enabled": "true"})["spark.ui.enabled"] == "true"


def test_spark_encrypts_its_local_files_unless_the_pipeline_json_turns_it_off() -> None:
    """The executors' copy of the credentials is a broadcast file in their local folders (issue 34)."""
    assert driver_conf(None)["spark.io.encryption.enabled"] == "true"
    assert driver_conf({"spark.io.encryption.enabled": "false"})["spark.io.encryption.enabled"] == "false"


@pytest.mark.parametrize(
    ("spark", "message"),
    [
        ({"executer_memory": "4g"}, "unknown key(s) in spark: executer_memory"),
        ({"executor_memory": "lots"}, "spark.executor_memory is a Spark memory size such as '4g'"),
        ({"executor_cores": 0}, "spark.executor_cores must be a positive whole number, not 0"),
        ({"num_executors": "3"}, "spark.num_executors must be a positive whole number"),
        (
            {"conf": {"spark.executor.extraJavaOptions": ["-Xss4m"]}},
            "spark.conf.spark.executor.extraJavaOptions",
        ),
        ({"conf": {"spark.submit.deployMode": "cluster"}}, "only client mode runs"),
        (
            {"conf": {"spark.authenticate.secret": "s3cr3t"}},
            "spark.conf.spark.authenticate.secret: a secret does not",
        ),
        ({"conf": {"spark.hadoop.fs.s3a.secret.key": "k"}}, "goes on the spark-submit command line"),
        ({"py_files": [""]}, "spark.py_files must be a list of paths or URIs"),
        ({"execution_timeout_minutes": -5}, "spark.execution_timeout_minutes must be a positive number"),
        ({"kubernetes_image": " "}, "spark.kubernetes_image must be a non-empty string"),
        (["conf"], "spark must be a JSON object"),
    ],
)
def test_a_wrong_spark_setting_fails_the_parse_naming_the_key(spark, message: str) -> None:
    with pytest.raises(PipelineConfigError) as refused:
        PipelineConfig.from_dict({"spark": spark})
    assert message in str(refused.value)


def test_properties_that_name_where_a_secret_comes_from_are_not_secrets() -> None:
    settings = PipelineConfig.from_dict(
        {
            "spark": {
                "conf": {
                    "spark.hadoop.fs.s3a.aws.credentials.provider": "com.example.EnvProvider",
                    "spark.kubernetes.authenticate.oauthTokenFile": "/var/run/secrets/token",
                }
            }
        }
    ).spark_settings()
    assert len(settings.spark_conf()) == 2
