"""Operator: run the binlog application under spark-submit and push its result to XCom."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from airflow_mysql_cdc.engine.apply.config import (
    MODES,
    ApplyConfig,
    ApplyConfigError,
    ApplyResult,
    Mode,
    SchemaChangeMode,
    StatementChangeMode,
    check_schema_change_mode,
    check_statement_change_mode,
)
from airflow_mysql_cdc.engine.errors import NextStep
from airflow_mysql_cdc.engine.runtime.progress import PROGRESS_INTERVAL_S, check_progress_interval
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.hooks.lake_storage import LakeStorageHook
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.hooks.next_steps import in_airflow
from airflow_mysql_cdc.operators import metrics
from airflow_mysql_cdc.operators.lake_target import LakeTarget
from airflow_mysql_cdc.operators.lineage import OpenLineageMixin, TaskLineage, lake_tables
from airflow_mysql_cdc.operators.prerequisites import parse_table_list
from airflow_mysql_cdc.operators.spark_application import ApplicationSecrets, SparkApplicationOperator
from airflow_mysql_cdc.runs.run_counts import RunCounts

APPLICATION = str(Path(__file__).resolve().parents[1] / "engine" / "entrypoints" / "binlog_to_delta.py")
"""The binlog application's entry point, found without importing it (it imports Spark and Delta)."""


class MySqlCdcBinlogApplyOperator(LakeTarget, OpenLineageMixin, SparkApplicationOperator):
    """Applies the binlog to the Delta lake for one segment (or another stop rule) via spark-submit.

    The application reads the binlog by GTID from ``start_gtids`` (or from the lake, when the lake
    is already further along the same history), merges changes into one Delta table per source
    table plus an append-only changelog, and commits the applied GTID set with the data. The
    result (end GTID set, rows per table, lag) is the task's XCom return value.

    Credentials go to the application in the environment, never in arguments or the config file:
    MySQL's from ``mysql_cdc_conn_id``, the lake's from ``lake_conn_id``.

    :param tables: ``schema.table`` names (templated; list or comma-separated string).
    :param lake_root: where the Delta tables live: a local path or a URI such as ``s3://bucket/prefix``
        (templated).
    :param storage_options: public delta-rs storage options of the lake (endpoint, region); a
        credential here is refused.
    :param lake_conn_id: an ``aws`` connection with the lake's credentials. Unset: the Spark driver's
        own environment or instance role.
    :param pipeline_id: names the pipeline's state in the lake (templated).
    :param start_gtids: GTID set to start from (templated; usually the previous run's end set).
    :param mode: ``segment`` (default: stop at ``segment_end``), ``until_gtid_set``,
        ``until_caught_up`` or ``live``.
    :param segment_end: ISO timestamp (templated); defaults to the run's ``data_interval_end``.
        Every transaction committed before it is applied; if it is in the future the application
        tails the binlog live until it passes.
    :param target_gtids: stop set for ``until_gtid_set`` mode (templated).
    :param rebase: move the pipeline to ``start_gtids`` although the lake is behind it; only after
        every table was re-snapshotted (purged binlogs). Templated; "true"/"false" are understood.
    :param catchup_parallelism: K > 1 reads a segment that is already closed (a catch-up) with K
        GTID-range readers as Spark tasks; an open segment is read by one reader as always.
    :param schema_changes: ``evolve`` (default) applies DDL on a tracked table to its lake table, or
        takes the table out of the pipeline to be snapshotted again (listed in the result's
        ``schema_changes``; the replicate operator does that snapshot in the same run); ``stop``
        fails before the DDL. See docs/operations.md.
    :param statement_changes: ``stop`` (default) fails before a statement-logged data change of a
        tracked table (its rows are not in the binlog); ``resnapshot`` takes the table out of the
        pipeline to be snapshotted again, like a schema change's. See docs/operations.md.
    :param progress_interval_s: seconds between two progress lines of the application in the log.
    :param spark_conn_id: a ``spark`` connection (master ``local[*]`` when it does not exist).

    A table whose lake copy the application found wrong (a batch's MERGE that did not do what its
    events imply, another writer's change since the last run) is stopped, the others applied on;
    the task then pushes its result and fails, not retried (:class:`TablesStoppedError`), and every
    later run warns until the table is re-snapshotted (docs/operations.md, "A table stopped").
    """

    template_fields: Sequence[str] = (
        "tables",
        "lake_root",
        "lake_conn_id",
        "pipeline_id",
        "start_gtids",
        "segment_end",
        "target_gtids",
        "rebase",
        "mysql_cdc_conn_id",
        "spark_conn_id",
    )
    ui_color = "#e3ecf9"

    def __init__(
        self,
        *,
        tables: str | Sequence[str],
        lake_root: str,
        pipeline_id: str,
        storage_options: dict[str, str] | None = None,
        lake_conn_id: str | None = None,
        start_gtids: str = "",
        mode: Mode = "segment",
        segment_end: str | None = None,
        target_gtids: str | None = None,
        mysql_cdc_conn_id: str = MySqlCdcHook.default_conn_name,
        batch_max_rows: int = 50_000,
        batch_max_seconds: float = 1.0,
        soft_deletes: bool = False,
        rebase: bool | str = False,
        catchup_parallelism: int = 1,
        schema_changes: SchemaChangeMode = "evolve",
        statement_changes: StatementChangeMode = "stop",
        progress_interval_s: float = PROGRESS_INTERVAL_S,
        **kwargs: Any,
    ) -> None:
        check_progress_interval(progress_interval_s, ApplyConfigError)
        super().__init__(**kwargs)
        self.progress_interval_s = progress_interval_s
        self.tables = tables
        self.take_lake_arguments(lake_root, storage_options, lake_conn_id)
        self.pipeline_id = pipeline_id
        self.start_gtids = start_gtids
        if mode not in MODES:
            raise ApplyConfigError(
                f"task {self.task_id!r}: mode must be one of {', '.join(MODES)}, not {mode!r}"
            )
        self.mode = mode
        self.segment_end = segment_end
        self.target_gtids = target_gtids
        self.mysql_cdc_conn_id = mysql_cdc_conn_id
        self.batch_max_rows = batch_max_rows
        self.batch_max_seconds = batch_max_seconds
        self.soft_deletes = soft_deletes
        self.rebase = rebase
        self.catchup_parallelism = catchup_parallelism
        self.schema_changes = check_schema_change_mode(schema_changes, where=f"task {self.task_id!r}")
        self.statement_changes = check_statement_change_mode(
            statement_changes, where=f"task {self.task_id!r}"
        )

    def _segment_end_us(self, context: Any) -> int | None:
        if self.mode != "segment":
            return None
        if self.segment_end:
            import pendulum

            end_at = pendulum.parse(self.segment_end)
            if not isinstance(end_at, datetime.datetime):
                raise AirflowFailException(f"segment_end must be a date and time, not {self.segment_end!r}")
            return int(end_at.timestamp() * 1_000_000)
        end = context.get("data_interval_end")
        if end is None:
            raise AirflowFailException("segment mode needs segment_end or a run with a data interval")
        return int(end.timestamp() * 1_000_000)

    def build_config(
        self, context: Any, server_id: int | None, storage_options: dict[str, str] | None = None
    ) -> ApplyConfig:
        """The application's configuration; ``storage_options`` are the public ones only."""
        return ApplyConfig(
            pipeline_id=self.pipeline_id,
            lake_root=self.lake_root,
            storage_options=storage_options if storage_options is not None else self.storage_options,
            tables=tuple(str(ref) for ref in parse_table_list(self.tables)),
            start_gtids=GtidSet.parse(self.start_gtids or ""),
            mode=self.mode,
            segment_end_us=self._segment_end_us(context),
            target_gtids=GtidSet.parse(self.target_gtids) if self.target_gtids else None,
            batch_max_rows=self.batch_max_rows,
            batch_max_seconds=self.batch_max_seconds,
            soft_deletes=self.soft_deletes,
            server_id=server_id,
            rebase=str(self.rebase).strip().lower() in ("true", "1", "yes"),
            schema_changes=self.schema_changes,
            statement_changes=self.statement_changes,
            progress_interval_s=self.progress_interval_s,
        )

    def execute(self, context: Any) -> dict[str, Any]:
        """The run's result as XCom (:meth:`ApplyResult.to_dict`)."""
        result = apply_binlog(
            self,
            lambda server_id, public_options: self.build_config(context, server_id, public_options),
            mysql_cdc_conn_id=self.mysql_cdc_conn_id,
            storage_options=self.storage_options,
            lake_conn_id=self.lake_conn_id,
            catchup_parallelism=self.catchup_parallelism,
        )
        self.lineage = self.planned_lineage().done(dict(result.rows_by_table))
        if result.stopped:  # the result is pushed first: the other tables' progress is real
            context["ti"].xcom_push(key="return_value", value=result.to_dict())
            fail_if_tables_stopped(result)
        return result.to_dict()

    def planned_lineage(self) -> TaskLineage:
        """The MySQL tables read, their target and changelog tables written."""
        tables = tuple(str(ref) for ref in parse_table_list(self.tables))
        return self.source_to_lake_lineage(tables)


class TablesStoppedError(AirflowFailException):
    """The application stopped tables whose lake copy it found wrong; the others were applied.

    Not retried: a retry would apply the other tables again and find these out of the pipeline; only
    a re-snapshot of each (the run conf ``{"resnapshot": [...]}``) brings them back.
    """


def fail_if_tables_stopped(result: ApplyResult) -> None:
    """Raise :class:`TablesStoppedError` when ``result`` stopped tables (after it was published)."""
    if not result.stopped:
        return
    raise TablesStoppedError(
        f"{len(result.stopped)} table(s) stopped in this run; the other tables were applied and their "
        "progress is published. "
        + " ".join(evolution.describe() for evolution in result.stopped)
        + in_airflow(NextStep.resnapshot(*(evolution.table for evolution in result.stopped)))
    )


ConfigBuilder = Callable[[int | None, dict[str, str]], ApplyConfig]
"""(the connection's replication server_id, the lake's public storage options) -> the configuration."""


def apply_binlog(
    runner: SparkApplicationOperator,
    build_config: ConfigBuilder,
    *,
    mysql_cdc_conn_id: str,
    storage_options: dict[str, str],
    lake_conn_id: str | None,
    catchup_parallelism: int = 1,
    report: bool = True,
) -> ApplyResult:
    """Run the binlog application under ``runner`` (the operator whose task this is); its result.

    ``report``: emit the ``mysql_cdc.apply.*`` metrics of the result and end with its
    :func:`summary_line`; False for a caller that counts the run itself once it has published it and
    logs the summary last (the replicate task: :mod:`airflow_mysql_cdc.runs.run_counts`).
    """
    mysql_hook, lake_hook = MySqlCdcHook(mysql_cdc_conn_id), LakeStorageHook(lake_conn_id)
    endpoint = mysql_hook.get_endpoint()
    public_options, secret_options = lake_hook.get_storage_options(storage_options)
    config = build_config(endpoint.replication_server_id, public_options)
    runner.log.info(
        "Applying binlog of %s to %s: mode %s, start %s",
        endpoint,
        config.lake_root,
        config.mode,
        config.start or "(empty)",
    )
    result = ApplyResult.from_dict(
        runner.run_application(
            APPLICATION,
            name=f"mysql-cdc-apply-{config.pipeline_id}",
            config_json=config.to_json(),
            secrets=ApplicationSecrets.of(endpoint, secret_options),
            extra_args=("--catchup-parallelism", str(catchup_parallelism)) if catchup_parallelism > 1 else (),
        )
    )
    _log_outcome(runner.log, config, result)
    mysql_hook.report_tables_read(endpoint, config.tables)
    lake_hook.report_tables_written(table.location for table in lake_tables(config.lake_root, config.tables))
    if report:
        metrics.emit_apply(result, config.tables)
        runner.log.info("%s", summary_line(result))
    return result


def _log_outcome(log: Any, config: ApplyConfig, result: ApplyResult) -> None:
    """What the application did besides applying: a segment already held, tables that joined,
    schema changes, stopped tables (every run, until re-snapshotted), a segment past its interval."""
    if result.already_applied:
        log.info(
            "The lake already holds this segment (a retried or cleared run): nothing applied; "
            "the segment ends at %s",
            result.end_gtids or "(empty)",
        )
    for table, end in result.caught_up.items():
        log.info("%s was caught up to %s and joined the pipeline", table, end)
    for change in result.schema_changes:
        if change.action != "stop":
            log.info("%s", change.describe())
    for _table, message in sorted(result.stopped_tables.items()):  # every run, until re-snapshotted
        log.warning("%s", message)
    last_commit_us = result.last_commit_timestamp_us
    if (
        config.segment_end_us is not None
        and last_commit_us is not None
        and last_commit_us >= config.segment_end_us
    ):
        log.info(
            "This segment extends past the interval end: a snapshot's chunks are exact only from "
            "their consistent point %s on, so the run applied up to the first transaction after it "
            "committed at or after the interval end (docs/pipeline-dag.md)",
            result.consistent_point or "(empty)",
        )


def summary_line(result: ApplyResult, run: RunCounts | None = None) -> str:
    """One readable line for a run's application: transactions, rows per second, lag or idle.

    ``run``: the run's changes counted in the lake (the replicate task, :mod:`..runs.run_counts`),
    which lead the line, with what earlier tries of the run applied of them; the rate stays the
    application's own (its rows in its time).
    """
    rows = sum(result.rows_by_table.values())
    duration = result.duration_s
    rate = f", {rows / duration:,.0f} rows/s" if duration > 0 and rows else ""
    counted = f"{result.transactions:,} transaction(s), {rows:,} row change(s)"
    if run is not None:
        counted = f"{run.transactions:,} transaction(s), {run.rows:,} row change(s)"
        if (run.earlier_transactions, run.earlier_rows) == (run.transactions, run.rows) and run.rows:
            counted += ", all of them applied by an earlier try of this run"
        elif run.by_earlier_tries:
            counted += (
                f", of which an earlier try of this run applied {run.earlier_transactions:,} transaction(s), "
                f"{run.earlier_rows:,} row change(s) and this try the rest"
            )
    if result.already_applied:
        state = "already in the lake"
    elif not (run.transactions if run is not None else result.transactions):
        state = "idle: no transaction of these tables to apply"
    elif result.lag_s is None:
        state = "lag unknown"
    else:
        state = f"last applied commit {human_duration(result.lag_s)} old"
    return (
        f"Summary: {counted}{rate} in {human_duration(duration)}; {state}; "
        f"end set {result.end_gtids or '(empty)'}"
    )


def human_duration(seconds: float) -> str:
    """``0.4 s``, ``12 s``, ``3 min 5 s``, ``2 h 10 min``, ``3 d 4 h``."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    for unit, size, smaller, smaller_size in (
        ("d", 86400, "h", 3600),
        ("h", 3600, "min", 60),
        ("min", 60, "s", 1),
    ):
        if whole >= size:
            rest = (whole % size) // smaller_size
            return f"{whole // size} {unit}" + (f" {rest} {smaller}" if rest else "")
    return f"{whole} s"
