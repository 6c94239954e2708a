"""How the lake's object store is reached: delta-rs storage options, split into public and secret.

Invariant: a secret storage option (a credential) is never in a configuration file, XCom, a
process argument or the lake. Configurations (the pipeline's JSON file, ``ApplyConfig``,
``SnapshotConfig``) are printed, logged and handed to spark-submit as files, so they may hold only
*public* options (endpoint, region, ``AWS_ALLOW_HTTP``, ...): :func:`check_storage_options`
refuses a secret key wherever such a configuration is built or read. Secrets reach the Spark
applications only through one environment variable, ``AIRFLOW_MYSQL_CDC_LAKE_STORAGE_OPTIONS``,
set by the operator from an Airflow connection and read once by the entry points
(:func:`secret_storage_options_from_environment`). Without any, delta-rs takes credentials from
the driver's own environment or instance role.

One rule decides what is secret (:func:`is_secret_storage_key`): a key naming a secret, password,
token, access key, account key, SAS, credential or private key. ``AWS_ACCESS_KEY_ID`` counts as
secret: it is half of a credential and identifies the account.

Why the pipeline can trust concurrent commits on an object store: delta-rs 1.x commits a Delta
version by a conditional PUT (``If-None-Match: *``) of its log file, so of two writers racing
for the same version exactly one wins and the other gets ``CommitFailedError``; the pipeline's
single-writer fencing (:mod:`.pipeline_state`) relies on that. AWS S3, MinIO and moto honour
conditional PUT; ``AWS_S3_ALLOW_UNSAFE_RENAME`` would give that guarantee up and is refused.
Guarded by ``test_two_writers_racing_a_claim_on_s3_exactly_one_wins`` (tests/integration/
test_object_store_lake.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from airflow_mysql_cdc.engine.errors import ConfigurationError

LAKE_STORAGE_OPTIONS_VARIABLE = "AIRFLOW_MYSQL_CDC_LAKE_STORAGE_OPTIONS"

SECRET_KEY_MARKERS = (
    "SECRET",
    "PASSWORD",
    "TOKEN",
    "ACCESS_KEY",
    "ACCOUNT_KEY",
    "SAS",
    "CREDENTIAL",
    "PRIVATE_KEY",
    "CLIENT_SECRET",
)

_UNSAFE_OPTIONS = {
    "AWS_S3_ALLOW_UNSAFE_RENAME": (
        "it lets delta-rs commit without mutual exclusion, so two writers can both win the same Delta "
        "version and the pipeline's single-writer fencing no longer holds"
    ),
}


class StorageOptionsError(ConfigurationError, ValueError):
    """Storage options that are malformed, unsafe, or secret where they would be printed."""


def is_secret_storage_key(key: str) -> bool:
    """True when ``key`` names a credential (case-insensitive): it must never be printed or stored."""
    upper = key.upper()
    return any(marker in upper for marker in SECRET_KEY_MARKERS)


def check_storage_options(options: object, *, where: str) -> dict[str, str]:
    """``options`` as public storage options of the configuration ``where``, or a clear refusal.

    Refused: anything but a JSON object of strings, a secret key (the configuration is printed and
    passed to spark-submit as a file), and options that give up safe concurrent commits.
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in options.items()
    ):
        raise StorageOptionsError(
            f"storage_options in {where} must be a JSON object of strings, such as "
            '{"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "us-east-1"}'
        )
    secret = sorted(key for key in options if is_secret_storage_key(key))
    if secret:
        raise StorageOptionsError(
            f"storage_options in {where} holds credentials ({', '.join(secret)}): {where} is printed, "
            "logged and passed to spark-submit as a file, so a credential there leaks. Remove them and "
            "put them in the connection named by lake_conn_id (an 'aws' connection: login = "
            "access key id, password = secret access key), or give the Spark driver its own "
            "credentials (environment variables or an instance role)."
        )
    _refuse_unsafe(options, where)
    return dict(options)


CREDENTIAL_KEYS = ("password", "user", "login", "host", "secret_storage_options")
"""Keys no configuration file may hold: a login, or where it leads (the endpoint comes with it)."""


def refuse_credentials(
    data: Mapping[str, object],
    *,
    where: str,
    instead: str = "the operator passes them in the application's environment, never in a file",
    error: type[Exception] = StorageOptionsError,
) -> None:
    """The one refusal of a credential in a configuration (every application's, the pipeline JSON).

    Raises ``error`` naming the keys found, why they cannot be there, and ``instead``: where they go.
    """
    found = [key for key in CREDENTIAL_KEYS if key in data]
    if found:
        raise error(
            f"{where} holds {', '.join(found)}: credentials do not belong in a configuration, which is "
            f"written to disk, printed and logged. Remove them: {instead}."
        )


def _refuse_unsafe(options: Mapping[str, str], where: str) -> None:
    for key, value in options.items():
        why = _UNSAFE_OPTIONS.get(key.upper())
        if why and value.strip().lower() in ("true", "1", "yes"):
            raise StorageOptionsError(
                f"{key}={value} in {where} is refused: {why}. Use a store that supports conditional "
                "PUT (AWS S3, MinIO, ...: see docs/configuration.md, 'The lake') and remove the option."
            )


def split_storage_options(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(public, secret) parts of ``options`` by :func:`is_secret_storage_key`."""
    public = {key: value for key, value in options.items() if not is_secret_storage_key(key)}
    secret = {key: value for key, value in options.items() if is_secret_storage_key(key)}
    return public, secret


def secret_storage_options_to_environment(secret: Mapping[str, str]) -> dict[str, str]:
    """The environment a Spark application gets its secret storage options from (none: empty)."""
    if not secret:
        return {}
    return {LAKE_STORAGE_OPTIONS_VARIABLE: json.dumps(dict(secret))}


def secret_storage_options_from_environment(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The secret storage options the operator passed in the environment (none: empty)."""
    raw = environ.get(LAKE_STORAGE_OPTIONS_VARIABLE)
    if not raw:
        return {}
    try:
        options = json.loads(raw)
    except json.JSONDecodeError:
        options = None
    if not isinstance(options, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in options.items()
    ):
        raise StorageOptionsError(
            f"{LAKE_STORAGE_OPTIONS_VARIABLE} must hold a JSON object of strings (the lake's storage "
            "options the operator passes to the application); it does not. Unset it, or let the "
            "operator set it from the lake connection."
        )
    return options


def merged_storage_options(public: Mapping[str, str], secret: Mapping[str, str]) -> dict[str, str] | None:
    """What delta-rs gets: the public options with the secret ones; None when there are none."""
    return {**public, **secret} or None


def lake_table_exists(uri: str, storage_options: Mapping[str, str] | None = None) -> bool:
    """Whether a Delta table is at ``uri``: asked of the store through delta-rs, never the filesystem."""
    from deltalake import DeltaTable  # not at import: the operators import this module when a DAG is parsed

    return DeltaTable.is_deltatable(uri, dict(storage_options) if storage_options else None)
