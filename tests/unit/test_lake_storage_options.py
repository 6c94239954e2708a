"""Storage options: one rule for what is secret; secrets refused wherever a config is printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_mysql_cdc.engine.apply.config import ApplyConfig
from airflow_mysql_cdc.engine.entrypoints import binlog_to_delta, snapshot_to_delta
from airflow_mysql_cdc.engine.errors import ExitCode
from airflow_mysql_cdc.engine.lake.storage import (
    LAKE_STORAGE_OPTIONS_VARIABLE,
    StorageOptionsError,
    is_secret_storage_key,
    secret_storage_options_from_environment,
    secret_storage_options_to_environment,
)
from airflow_mysql_cdc.engine.snapshot.config import SnapshotConfig
from airflow_mysql_cdc.pipeline.config import PipelineConfig, PipelineConfigError

SECRET = "sEcReT-value-for-the-leak-check"
PUBLIC = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}


@pytest.mark.parametrize(
    "key",
    [
        "AWS_SECRET_ACCESS_KEY", "aws_access_key_id", "AWS_SESSION_TOKEN", "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_SAS_KEY", "azure_client_secret", "GOOGLE_SERVICE_ACCOUNT_KEY_PASSWORD",
        "GOOGLE_APPLICATION_CREDENTIALS", "private_key", "bearer_token",
    ],
)  # fmt: skip
def test_credential_keys_are_secret(key: str) -> None:
    assert is_secret_storage_key(key)


@pytest.mark.parametrize(
    "key", ["AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ALLOW_HTTP", "AZURE_STORAGE_ACCOUNT_NAME", "timeout"]
)
def test_location_keys_are_public(key: str) -> None:
    assert not is_secret_storage_key(key)


def _pipeline_config(options: dict[str, str]) -> None:
    PipelineConfig.from_dict({"lake_root": "s3://lake/shop", "storage_options": options})


def _apply_config(options: dict[str, str]) -> None:
    ApplyConfig(pipeline_id="p", lake_root="s3://lake/shop", tables=("a.b",), storage_options=options)


def _snapshot_config(options: dict[str, str]) -> None:
    SnapshotConfig(lake_root="s3://lake/shop", tables=("a.b",), storage_options=options)


@pytest.mark.parametrize("build", [_pipeline_config, _apply_config, _snapshot_config])
def test_a_credential_in_any_config_is_refused_with_where_it_belongs(build) -> None:
    with pytest.raises(ValueError) as refused:
        build(PUBLIC | {"AWS_SECRET_ACCESS_KEY": SECRET})
    message = str(refused.value)
    assert "holds credentials (AWS_SECRET_ACCESS_KEY)" in message
    assert "passed to spark-submit as a file" in message  # why it matters
    assert "lake_conn_id" in message and "instance role" in message  # what to do
    assert SECRET not in message  # the refusal does not print the secret it refuses


@pytest.mark.parametrize("build", [_pipeline_config, _apply_config, _snapshot_config])
def test_giving_up_safe_concurrent_commits_is_refused(build) -> None:
    with pytest.raises(ValueError, match="single-writer fencing no longer holds"):
        build(PUBLIC | {"AWS_S3_ALLOW_UNSAFE_RENAME": "true"})


def test_storage_options_must_be_an_object_of_strings() -> None:
    with pytest.raises(PipelineConfigError, match="must be a JSON object of strings"):
        PipelineConfig.from_dict({"storage_options": {"AWS_ALLOW_HTTP": True}})


def test_public_options_and_the_lake_connection_are_pipeline_settings() -> None:
    config = PipelineConfig.from_dict(
        {"lake_root": "s3://lake/shop/", "storage_options": PUBLIC, "lake_conn_id": "lake_s3"}
    )
    assert (config.storage_options, config.lake_conn_id) == (PUBLIC, "lake_s3")


def test_secret_options_from_the_environment_reach_delta_rs_but_never_the_json_or_repr() -> None:
    config = ApplyConfig(
        pipeline_id="p",
        lake_root="s3://lake/shop",
        tables=("a.b",),
        storage_options=PUBLIC,
        secret_storage_options={"AWS_SECRET_ACCESS_KEY": SECRET},
    )
    assert config.lake_storage_options() == PUBLIC | {"AWS_SECRET_ACCESS_KEY": SECRET}
    assert SECRET not in config.to_json() and SECRET not in repr(config)
    assert json.loads(config.to_json())["storage_options"] == PUBLIC
    assert ApplyConfig.from_dict(json.loads(config.to_json())).secret_storage_options == {}
    snapshot = SnapshotConfig(
        lake_root="s3://lake/shop", tables=("a.b",), secret_storage_options={"AWS_SESSION_TOKEN": SECRET}
    )
    assert SECRET not in snapshot.to_json() and SECRET not in repr(snapshot)


def test_a_config_file_cannot_carry_secret_options_under_their_own_key() -> None:
    with pytest.raises(ValueError, match="holds secret_storage_options: credentials do not belong"):
        ApplyConfig.from_dict(
            {"pipeline_id": "p", "lake_root": "/l", "tables": ["a.b"], "secret_storage_options": {"X": "y"}}
        )


def test_secret_options_travel_in_one_environment_variable() -> None:
    environment = secret_storage_options_to_environment({"AWS_SECRET_ACCESS_KEY": SECRET})
    assert list(environment) == [LAKE_STORAGE_OPTIONS_VARIABLE]
    assert secret_storage_options_from_environment(environment) == {"AWS_SECRET_ACCESS_KEY": SECRET}
    assert secret_storage_options_to_environment({}) == {}
    assert secret_storage_options_from_environment({}) == {}


def test_a_malformed_environment_variable_is_a_clear_error() -> None:
    with pytest.raises(StorageOptionsError, match="must hold a JSON object of strings"):
        secret_storage_options_from_environment({LAKE_STORAGE_OPTIONS_VARIABLE: "[1, 2]"})


@pytest.mark.parametrize("entry_point", [binlog_to_delta, snapshot_to_delta])
def test_an_application_given_a_config_with_a_credential_exits_with_a_configuration_error(
    entry_point, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    config_file = tmp_path / "config.json"
    config_file.write_text(
        json.dumps(
            {
                "lake_root": "s3://lake/shop",
                "tables": ["a.b"],
                "storage_options": {"AWS_SECRET_ACCESS_KEY": SECRET},
            }
            | ({"pipeline_id": "p"} if entry_point is binlog_to_delta else {})
        )
    )
    code = entry_point.main(["--config", str(config_file), "--result-file", str(tmp_path / "result.json")])
    assert code == ExitCode.CONFIGURATION
    stderr = capsys.readouterr().err
    assert "holds credentials (AWS_SECRET_ACCESS_KEY)" in stderr
    assert SECRET not in stderr
