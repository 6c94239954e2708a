"""The pipeline DAG's ``doc_md``: what *this* pipeline replicates, where to, and how it behaves.

The UI shows a DAG's ``doc_md`` on its page; the DAG used to show the Python docstring of
``build_pipeline_dag`` (reST roles rendered literally, nothing about the pipeline). This page is
made from the pipeline configuration alone: tables, where each lands in the lake, the connection
ids, the schedule and every policy that decides what a run does (schema changes, statement-logged
changes, purged binlogs, deletes, maintenance, verification), with links to the docs.

Invariant: nothing secret is shown. The configuration holds none by construction (credentials are
refused in it and live in Airflow connections, named here by id only); ``storage_options`` are
public but are listed by name only, and a lake URI loses any ``user:password@`` part. Guarded by
tests/unit/airflow/pipeline/test_dag_docs.py.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from airflow_mysql_cdc.engine.lake.layout import LakeLayout, lake_uri
from airflow_mysql_cdc.engine.lake.maintenance.policy import MaintenancePolicy
from airflow_mysql_cdc.pipeline.config import PipelineConfig

DOCS_PAGES = {
    "pipeline": "pipeline-dag.md",
    "configuration": "configuration.md",
    "operations": "operations.md",
    "operators": "operators.md",
}

_SCHEMA_CHANGES = {
    "evolve": "evolve: DDL on a tracked table evolves its lake table in place, or re-snapshots it "
    "within the run",
    "stop": "stop: the run stops before DDL on a tracked table, naming it",
}
_STATEMENT_CHANGES = {
    "stop": "stop: the run stops before a statement-logged change of a tracked table, naming it",
    "resnapshot": "resnapshot: a statement-logged change re-snapshots that table within the run",
}
_ON_PURGED = {
    "fail": "fail: the run fails at once, naming the purged GTIDs",
    "resnapshot": "resnapshot: every table is snapshotted again and the pipeline rebased",
}


def _shown_uri(root: str) -> str:
    """The lake location as shown: without any credentials written into the URI."""
    uri = lake_uri(root)
    if "://" not in uri:
        return uri
    parts = urlsplit(uri)
    if parts.username is None and parts.password is None:
        return uri
    host = parts.hostname or ""
    return urlunsplit(parts._replace(netloc=f"{host}:{parts.port}" if parts.port else host))


def _docs_link(config: PipelineConfig, page: str, title: str) -> str:
    name = DOCS_PAGES[page]
    if config.docs_url:
        return f"[{title}]({config.docs_url.rstrip('/')}/{name})"
    return f"{title} (`docs/{name}`)"


def _maintenance(config: PipelineConfig) -> str:
    policy = MaintenancePolicy.from_dict(config.maintenance)
    if not policy.enabled:
        return "off (`maintenance.enabled` is false): the lake's tables are not compacted or vacuumed here"
    return (
        f"every {policy.interval_hours:g} h: compaction sorted by key into ~{policy.target_file_mb} MB "
        f"files once a table has {policy.small_files} small files, checkpoints, expired logs cleaned up, "
        f"vacuum keeping {policy.vacuum_retention_hours:g} h"
    )


def _verify(config: PipelineConfig) -> str:
    settings = config.verify_settings()
    if not settings.enabled:
        return "off: no `verify_lake` task"
    what = "every row" if settings.mode == "full" else f"{settings.sample_chunks} chunk(s) per table per run"
    extras = [
        "repairs the differing keys" if settings.repair else "fails on a difference, naming the repair",
        "values masked" if settings.mask_values else f"up to {settings.max_examples} examples shown",
    ]
    return (
        f"{settings.mode}: `verify_lake` compares {what} with the source at the run's position; "
        f"{', '.join(extras)}"
    )


def _deletes(config: PipelineConfig) -> str:
    if config.soft_deletes:
        return "on: a row deleted at the source stays in the lake, flagged `_cdc_deleted`"
    return "off: a row deleted at the source is removed from the lake"


def describe_pipeline(config: PipelineConfig) -> str:
    """The DAG's ``doc_md`` for ``config`` (Markdown)."""
    layout = LakeLayout(config.lake_root)
    lake = _shown_uri(config.lake_root)
    tables = "\n".join(
        f"| `{name}` | `{_shown_uri(layout.target(*name.split('.', 1)))}` |" for name in config.tables
    )
    credentials = f"connection `{config.lake_conn_id}`" if config.lake_conn_id else "the Spark driver's own"
    options = ", ".join(f"`{key}`" for key in sorted(config.storage_options)) or "none"
    sensor = config.sensor_mode or "Airflow's `[operators] default_deferrable` (else reschedule)"
    backlog = "on" if config.catch_up_backlog else "off"
    return f"""\
# MySQL CDC pipeline `{config.pipeline_id}`

Replicates {len(config.tables)} MySQL table(s) into Delta tables: a lock-free snapshot first, then
GTID binlog change data capture, one data interval per run. After each successful run every lake
table equals its source as of the run's published end GTID set (the `replicate` task's XCom).

`check_prerequisites >> load_checkpoint >> resumability >> replicate >> maintain_lake\
{" >> verify_lake" if config.verify_settings().enabled else ""}`

| table | lake table |
| --- | --- |
{tables}

| setting | value |
| --- | --- |
| lake | `{lake}` (the checkpoint chain: `{_shown_uri(layout.checkpoints)}`) |
| lake credentials | {credentials}; storage options: {options} |
| MySQL connection | `{config.mysql_cdc_conn_id}` |
| Spark connection | `{config.spark_conn_id}` |
| schedule | `{config.schedule}` from {config.start_date}, catchup {"on" if config.catchup else "off"} |
| late runs | catch up the backlog: {backlog}; catch-up readers: {config.catchup_parallelism} |
| retries | {config.retries}, {config.retry_delay_s} s apart (a failure no retry can fix fails at once) |
| resumability | waits up to {config.resumability_timeout_s} s for a lagging server; sensor mode: {sensor} |

## Policies

- **Schema changes** (`schema_changes`): {_SCHEMA_CHANGES[config.schema_changes]}.
- **Statement-logged changes** (`statement_changes`): {_STATEMENT_CHANGES[config.statement_changes]}.
- **Purged binlogs** (`on_purged`): {_ON_PURGED[config.on_purged]}.
- **Deletes** (`soft_deletes`): {_deletes(config)}.
- **Maintenance** (`maintenance`): {_maintenance(config)}.
- **Verification** (`verify`): {_verify(config)}.

Runs never wait for each other; clearing, retrying and backfilling are safe; a run dated before the
first interval is skipped with the reason. Docs: {_docs_link(config, "pipeline", "the pipeline DAG")},
{_docs_link(config, "configuration", "every configuration key")},
{_docs_link(config, "operations", "operations")}.

*Made from the pipeline configuration (`dags/mysql_cdc_daily.py`); credentials live in the
connections named above, never here.*
"""
