"""Provider metadata that Airflow discovers through the ``apache_airflow_provider`` entry point."""

from __future__ import annotations

from typing import Any

from airflow_mysql_cdc import __version__

CONNECTION_TYPE = "mysql_cdc"
INTEGRATION = "MySQL CDC"
_PACKAGE = "airflow_mysql_cdc"
TLS_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
"""The connection form's TLS modes: ``engine.values.tls.TLS_MODES`` (a test holds them equal), not
imported from there, since Airflow reads this module in every process and that one imports pymysql."""
HOW_TO_GUIDES = (
    "prerequisites",
    "snapshot",
    "binlog-apply",
    "replicate",
    "lake-maintenance",
    "verify",
    "gtid-sensors",
    "real-scheduler",
)
"""The pages of docs/how-to/ (tests/unit/test_howto_examples.py checks each exists, and none is left out)."""
EXTRA_LINKS = (
    "airflow_mysql_cdc.operators.links.MySqlCdcLakeLocationLink",
    "airflow_mysql_cdc.operators.links.MySqlCdcSparkUiLink",
    "airflow_mysql_cdc.operators.run_record_link.MySqlCdcRunRecordLink",
)
"""The operators' extra links, one per line (tests/unit/airflow/test_provider_info.py: each imports,
and every link class an operator of the package shows is listed)."""


def _modules(layer: str, *names: str) -> list[dict[str, Any]]:
    return [{"integration-name": INTEGRATION, "python-modules": [f"{_PACKAGE}.{layer}.{n}" for n in names]}]


def get_provider_info() -> dict[str, Any]:
    """Return the provider description Airflow's ProvidersManager reads.

    ``package-name`` must equal the distribution name, or Airflow ignores the provider. The
    hooks, operators, sensors and triggers are listed by module, as the first-party providers list
    theirs (Airflow's ``provider_info.schema.json``); tests/unit/airflow/test_provider_info.py
    checks that every listed module imports and that every such class of the package is listed.
    """
    return {
        "package-name": "airflow-mysql-cdc",
        "name": "MySQL CDC",
        "description": "Replicate MySQL tables into Delta Lake by lock-free snapshot plus GTID binlog CDC "
        "on Apache Spark.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "external-doc-url": "https://dev.mysql.com/doc/refman/8.4/en/replication-gtids.html",
                "how-to-guide": [f"/docs/how-to/{page}.md" for page in HOW_TO_GUIDES],
                "tags": ["software"],
            }
        ],
        "hooks": _modules("hooks", "mysql_cdc", "lake_storage", "spark_submit"),
        "operators": _modules(
            "operators",
            "prerequisites",
            "snapshot",
            "binlog_apply",
            "replicate",
            "spark_application",
            "maintenance",
            "engine_process",
            "verify",
        ),
        "sensors": _modules("sensors", "gtid_sensors"),
        "triggers": _modules("triggers", "gtid_state"),
        "extra-links": list(EXTRA_LINKS),
        "connection-types": [
            {
                "connection-type": CONNECTION_TYPE,
                "hook-class-name": "airflow_mysql_cdc.hooks.mysql_cdc.MySqlCdcHook",
                "hook-name": INTEGRATION,
                "ui-field-behaviour": {
                    "hidden-fields": [],
                    "relabeling": {"schema": "Database (optional)"},
                    "placeholders": {"port": "3306", "host": "mysql.example.com"},
                },
                "conn-fields": {
                    "server_id": {
                        "label": "Replication server_id",
                        "description": "server_id the binlog readers use; must differ from the source "
                        "server's and from every other replica or reader of it.",
                        "schema": {"type": ["integer", "null"]},
                    },
                    "ssl_mode": {
                        "label": "TLS mode",
                        "description": "DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY "
                        "(the MySQL client's --ssl-mode); empty: VERIFY_CA with a CA file, else PREFERRED.",
                        "schema": {
                            "type": ["string", "null"],
                            "enum": [None, *TLS_MODES],
                            # The UI shows an enum member's text ("null" for None) unless it is named here.
                            "values_display": {"null": "(automatic)", **{mode: mode for mode in TLS_MODES}},
                        },
                    },
                    "ssl_ca": {"label": "TLS CA file", "schema": {"type": ["string", "null"]}},
                    "ssl_cert": {
                        "label": "TLS client certificate file",
                        "schema": {"type": ["string", "null"]},
                    },
                    "ssl_key": {"label": "TLS client key file", "schema": {"type": ["string", "null"]}},
                    "ssl_verify_identity": {
                        "label": "Verify the server's host name",
                        "schema": {"type": ["boolean", "null"], "default": False},
                    },
                    "server_public_key_path": {
                        "label": "Server RSA public key file",
                        "description": "For caching_sha2_password without TLS: the server's public key "
                        "(PEM), so it is not asked from the server.",
                        "schema": {"type": ["string", "null"]},
                    },
                },
            }
        ],
    }
