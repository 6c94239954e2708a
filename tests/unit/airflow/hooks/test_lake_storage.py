"""The lake connection: an ``aws`` connection's credentials become secret, masked storage options;
the operators refuse credentials among their public options."""

from __future__ import annotations

import json

import pytest
from airflow.sdk.log import _secrets_masker

from airflow_mysql_cdc.hooks.lake_storage import LakeStorageHook
from airflow_mysql_cdc.operators.binlog_apply import MySqlCdcBinlogApplyOperator
from airflow_mysql_cdc.operators.maintenance import MySqlCdcLakeMaintenanceOperator
from airflow_mysql_cdc.operators.prerequisites import MySqlCdcPrerequisitesOperator
from airflow_mysql_cdc.operators.replicate import MySqlCdcReplicateOperator
from airflow_mysql_cdc.operators.snapshot import MySqlCdcSnapshotOperator
from airflow_mysql_cdc.operators.verify import MySqlCdcVerifyOperator

SECRET = "hook-test-secret-7f3a9c"


def _aws_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: object) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "aws", **fields}))


def test_an_aws_connection_gives_public_location_and_secret_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    extra = {
        "region_name": "eu-west-1",
        "endpoint_url": "http://127.0.0.1:9000",
        "aws_session_token": "tok-123456",
    }
    _aws_connection(monkeypatch, "lake_s3", login="AKIAHOOKTEST", password=SECRET, extra=extra)
    public, secret = LakeStorageHook("lake_s3").get_storage_options({"AWS_REGION": "us-east-1"})
    assert public == {
        "AWS_REGION": "us-east-1",  # the pipeline's own setting wins over the connection's
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ALLOW_HTTP": "true",  # the connection names a plain-HTTP endpoint
    }
    assert secret == {
        "AWS_ACCESS_KEY_ID": "AKIAHOOKTEST",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_SESSION_TOKEN": "tok-123456",
    }
    assert _secrets_masker().redact(f"key {SECRET} token tok-123456") == "key *** token ***"


def test_the_amazon_providers_credential_extras_are_understood(monkeypatch: pytest.MonkeyPatch) -> None:
    _aws_connection(
        monkeypatch, "lake_extras", extra={"aws_access_key_id": "AKIAEXTRA", "aws_secret_access_key": SECRET}
    )
    _, secret = LakeStorageHook("lake_extras").get_storage_options()
    assert secret == {"AWS_ACCESS_KEY_ID": "AKIAEXTRA", "AWS_SECRET_ACCESS_KEY": SECRET}


def test_without_a_connection_the_driver_uses_its_own_credentials() -> None:
    assert LakeStorageHook(None).get_storage_options({"AWS_REGION": "us-east-1"}) == (
        {"AWS_REGION": "us-east-1"},
        {},
    )
    assert LakeStorageHook(None).get_delta_storage_options() is None


def test_a_connection_of_another_type_is_refused_with_what_to_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_LAKE_HTTP", json.dumps({"conn_type": "http", "password": SECRET}))
    with pytest.raises(ValueError, match="has type 'http'; use an 'aws' connection"):
        LakeStorageHook("lake_http").get_storage_options()


def test_a_credential_among_the_operators_storage_options_is_refused() -> None:
    with pytest.raises(ValueError, match="holds credentials"):
        LakeStorageHook(None).get_storage_options({"AWS_SECRET_ACCESS_KEY": SECRET})


OPERATORS_TAKING_A_LAKE = [
    MySqlCdcSnapshotOperator,
    MySqlCdcBinlogApplyOperator,
    MySqlCdcReplicateOperator,
    MySqlCdcVerifyOperator,
    MySqlCdcLakeMaintenanceOperator,
    MySqlCdcPrerequisitesOperator,
]


@pytest.mark.parametrize("operator_class", OPERATORS_TAKING_A_LAKE)
def test_an_operator_given_a_credential_in_storage_options_is_refused_when_the_dag_is_parsed(
    operator_class,
) -> None:
    """Every operator takes its lake arguments through operators/lake_target.py: one refusal."""
    pipeline = {"pipeline_id": "p"} if operator_class is not MySqlCdcSnapshotOperator else {}
    if operator_class is MySqlCdcPrerequisitesOperator:
        pipeline = {}
    with pytest.raises(ValueError, match="holds credentials \\(AWS_SECRET_ACCESS_KEY\\)"):
        operator_class(
            task_id="lake_task",
            tables=["shop.orders"],
            lake_root="s3://lake/shop",
            storage_options={"AWS_SECRET_ACCESS_KEY": SECRET},
            **pipeline,
        )
