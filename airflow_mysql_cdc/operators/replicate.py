"""Operator: one pipeline run, whole: place it in the chain, snapshot, apply its segment, publish.

Invariant: the decision where a run stands, the lake writes that follow from it and the record that
describes them happen in one task, so a run never publishes a record decided on a chain that
another run changed in the meantime. The example DAG gives this task ``max_active_tis_per_dag=1``:
of all its runs (scheduled, manual, backfills), one at a time is here. Marking a run failed, or
clearing only failed tasks, can then never leave a run green with a half-done chain step: this task
either published (or republished) the run's record, or it did not succeed.

A schema change that re-snapshots a table (docs/operations.md, "Schema changes") is finished in the
same run: the table left the pipeline at the DDL, the other tables streamed on to the segment's end;
then the table is snapshotted again and a second application joins it (the admission path) and
continues to its snapshot's consistent point, so the published end set is exact for every table.

A run that does not apply (its interval already has a record, or lies inside a later record's
segment) returns that record at once, without starting Spark: the cheap path that lets a backlog of
queued runs drain (docs/pipeline-dag.md). A covered one also skips the tasks after this one when
``skip_downstream_when_covered`` (the pipeline DAG's maintenance and verification): the queue of
covered runs on a 2-minute schedule once grew faster than it drained, each starting a maintenance
process and a sample verification at an unmoved position (issue 34, tests/unit/airflow/operators/
test_covered_run.py).

A table the binlog application stopped (its lake copy is wrong: docs/operations.md, "A table
stopped") is out of the record's promise: the record is published for the other tables, then the
task fails, not retried; later runs leave it out, warning, until a conf re-snapshots it.

A run triggered with a conf acts on named tables (:mod:`airflow_mysql_cdc.runs.actions`): re-snapshot,
pause, resume, rebase the checkpoint. The conf is checked before anything is written, each action is
logged, pushed (XCom ``actions``) and recorded in the run's checkpoint record.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from airflow.sdk.exceptions import AirflowException, DownstreamTasksSkipped

from airflow_mysql_cdc.engine.apply.config import (
    ApplyConfig,
    ApplyResult,
    SchemaChangeMode,
    StatementChangeMode,
    check_schema_change_mode,
    check_statement_change_mode,
)
from airflow_mysql_cdc.engine.runtime.progress import PROGRESS_INTERVAL_S, check_progress_interval
from airflow_mysql_cdc.engine.snapshot.result import SnapshotResult
from airflow_mysql_cdc.engine.values.gtid import GtidSet
from airflow_mysql_cdc.engine.values.json_values import JsonObject
from airflow_mysql_cdc.hooks.engine_process import EngineProcess
from airflow_mysql_cdc.hooks.mysql_cdc import MySqlCdcHook
from airflow_mysql_cdc.operators import metrics
from airflow_mysql_cdc.operators.binlog_apply import (
    ConfigBuilder,
    apply_binlog,
    fail_if_tables_stopped,
    human_duration,
    summary_line,
)
from airflow_mysql_cdc.operators.lake_target import LakeTarget
from airflow_mysql_cdc.operators.lineage import OpenLineageMixin, TaskLineage, lineage_of_record
from airflow_mysql_cdc.operators.row_reloads import ReloadTarget, reload_rows
from airflow_mysql_cdc.operators.run_record_link import MySqlCdcRunRecordLink
from airflow_mysql_cdc.operators.snapshot import run_snapshot
from airflow_mysql_cdc.operators.spark_application import SparkApplicationOperator
from airflow_mysql_cdc.operators.table_lists import rendered_table_names, table_names_argument
from airflow_mysql_cdc.runs import assets, run_counts
from airflow_mysql_cdc.runs.actions import ResnapshotRequest
from airflow_mysql_cdc.runs.lake import Placement
from airflow_mysql_cdc.runs.republish import push_again
from airflow_mysql_cdc.runs.run_step import RunChain, RunStep
from airflow_mysql_cdc.runs.segment import SegmentPlan


class ResnapshotLoopError(AirflowException):
    """A table re-snapshotted after a schema change changed again during every re-snapshot."""


class MySqlCdcReplicateOperator(LakeTarget, OpenLineageMixin, SparkApplicationOperator):
    """Replicates the run's segment into the lake and returns its checkpoint record (the XCom).

    Also pushes, when the run applies, its plan (XCom key ``plan``: tables to snapshot, restart,
    rebase), the snapshot application's result (``snapshot``) and the binlog application's
    (``applied``); they are kept in the record too, and a re-run of the interval (after a clear,
    which deletes them) pushes them again. The task log ends with the run's ``Summary:`` line.

    :param pipeline_id: names the pipeline's state and checkpoint log in the lake (templated).
    :param tables: ``schema.table`` names.
    :param lake_root: a local path or a URI (templated).
    :param storage_options: public delta-rs storage options; a credential here is refused.
    :param lake_conn_id: an ``aws`` connection with the lake's credentials.
    :param resumability_task_id: the task whose XCom says whether the binlogs were purged and every
        table is to be snapshotted again (``resnapshot_needed``); None: never.
    :param schema_changes: ``evolve`` (default): DDL on a tracked table evolves its lake table, or
        re-snapshots it within the run; ``stop``: the run fails before the DDL (docs/operations.md).
    :param statement_changes: ``stop`` (default): a statement-logged data change of a tracked table
        (binlog_format=STATEMENT/MIXED in some session) fails the run before it; ``resnapshot``:
        that table is snapshotted again within the run like a schema change's (docs/operations.md).
    :param max_resnapshot_rounds: how often one run re-snapshots tables whose schema changed (a
        table that changes again during its re-snapshot needs another round).
    :param progress_interval_s: seconds between two progress lines of the snapshot and the binlog
        application in the task log.
    :param outlets: by default the Airflow Assets of the lake's tables (per table its target and its
        changelog, :mod:`airflow_mysql_cdc.runs.assets`); each run fills their events' extra with
        what it wrote (docs/assets.md). Pass your own list to replace them, ``[]`` for none. A
        templated ``lake_root`` or ``tables`` has no default assets (a URI must be known when the DAG
        is parsed).
    :param catch_up_backlog_after: a run that continues the chain and starts more than this after its
        interval end (a backlog: runs queued behind a slow one, a resumed DAG) applies everything
        committed before it started, and its record ends there: the runs queued behind it find their
        intervals covered and finish without Spark. Usually the schedule's interval; None: never.
    :param skip_downstream_when_covered: a covered run (its interval inside another run's segment)
        skips every task after this one (the pipeline DAG's maintenance and verification): the lake's
        position did not move. False: they run as in any run.
    """

    template_fields: Sequence[str] = (
        "pipeline_id", "tables", "lake_root", "lake_conn_id", "mysql_cdc_conn_id", "spark_conn_id",
    )  # fmt: skip
    ui_color = "#dde9f7"
    operator_extra_links = (*SparkApplicationOperator.operator_extra_links, MySqlCdcRunRecordLink())

    def __init__(
        self,
        *,
        pipeline_id: str,
        tables: Sequence[str],
        lake_root: str,
        storage_options: dict[str, str] | None = None,
        lake_conn_id: str | None = None,
        mysql_cdc_conn_id: str = MySqlCdcHook.default_conn_name,
        chunk_size: int = 50_000,
        batch_max_seconds: float = 1.0,
        soft_deletes: bool = False,
        catchup_parallelism: int = 1,
        resumability_task_id: str | None = "resumability",
        catch_up_backlog_after: datetime.timedelta | None = None,
        schema_changes: SchemaChangeMode = "evolve",
        statement_changes: StatementChangeMode = "stop",
        max_resnapshot_rounds: int = 3,
        progress_interval_s: float = PROGRESS_INTERVAL_S,
        skip_downstream_when_covered: bool = False,
        **kwargs: Any,
    ) -> None:
        check_progress_interval(progress_interval_s, ValueError)
        if "outlets" not in kwargs and "{{" not in lake_root and "{{" not in str(tables):
            # The names, not the argument: a comma-separated string is a list of tables too.
            kwargs["outlets"] = assets.lake_table_assets(lake_root, table_names_argument(tables))
        super().__init__(**kwargs)
        self.pipeline_id = pipeline_id
        self.tables = table_names_argument(tables)
        self.take_lake_arguments(lake_root, storage_options, lake_conn_id)
        self.mysql_cdc_conn_id = mysql_cdc_conn_id
        self.chunk_size = chunk_size
        self.batch_max_seconds = batch_max_seconds
        self.soft_deletes = soft_deletes
        self.catchup_parallelism = catchup_parallelism
        self.resumability_task_id = resumability_task_id
        self.catch_up_backlog_after = catch_up_backlog_after
        self.schema_changes = check_schema_change_mode(schema_changes, where=f"task {self.task_id!r}")
        self.statement_changes = check_statement_change_mode(
            statement_changes, where=f"task {self.task_id!r}"
        )
        self.max_resnapshot_rounds = max_resnapshot_rounds
        self.progress_interval_s = progress_interval_s
        self.skip_downstream_when_covered = skip_downstream_when_covered
        self._engine: EngineProcess | None = None

    def execute(self, context: Any) -> JsonObject:
        self.tables = rendered_table_names(self.tables)
        run = RunStep.place(context, self._chain(), self.tables)
        if not run.applies:
            # load_checkpoint refused it already, unless a run published in between (a backfill's).
            run.refuse_actions_applying_nothing()
            return self._apply_nothing(context, run.position.placement)
        unsettled = self._reload_key_ranges(run)
        plan = run.plan(self._resumability(context), self._absent_tables())
        snapshot = self._snapshot(plan.tables, restart=plan.restart)
        run.push("snapshot", snapshot.to_dict())
        segment = _Segment(plan.segment_start(snapshot), self._segment_end(context, run.position.placement))
        result, earlier = self._apply(self._config_builder(run, plan, segment, unsettled))
        published = run.publish(result, segment.end, earlier)
        # The run's counts, every try's (runs/run_counts.py): the XCom, the metrics and the summary.
        counted = published.get("pushed", {}).get("applied") or result.to_dict()
        context["ti"].xcom_push(key="applied", value=counted)
        metrics.emit_apply(ApplyResult.from_dict(counted), self.tables)
        self.lineage = lineage_of_record(self.planned_lineage(), published)
        published = self._emit_asset_events(context, published)
        self.log.info("%s", summary_line(result, run_counts.counts_of(counted)))  # the log's last line
        if result.stopped:  # published for the other tables; the run must not end green
            context["ti"].xcom_push(key="return_value", value=published)
            fail_if_tables_stopped(result)
        return published

    def _chain(self) -> RunChain:
        options = self.delta_storage_options()
        return RunChain(self.pipeline_id, self.lake_root, self.mysql_cdc_conn_id, options, self.task_id)

    def _resumability(self, context: Any) -> JsonObject | None:
        """The resumability sensor's XCom (purged binlogs: the plan re-snapshots every table)."""
        if not self.resumability_task_id:
            return None
        return context["ti"].xcom_pull(task_ids=self.resumability_task_id)

    def _reload_key_ranges(self, run: RunStep) -> dict[str, GtidSet]:
        """Re-load the key ranges the run's conf names (pushed as ``reloads``); the keys they left to
        the stream (changed after the lake's position) may be wrong there until the stream sets
        them: their batches are checked by bounds for a while (``ApplyConfig.unsettled``)."""
        if not run.actions.row_ranges:
            return {}
        run.push("reloads", self._reload_rows(run.actions.row_ranges))
        executed = MySqlCdcHook(self.mysql_cdc_conn_id).get_gtid_executed()
        return {request.table: executed for request in run.actions.row_ranges}

    def _config_builder(
        self, run: RunStep, plan: SegmentPlan, segment: _Segment, unsettled: dict[str, GtidSet]
    ) -> ConfigBuilder:
        """The binlog application's configuration of this run, for each application it starts."""
        segment_end_us = int(segment.end.timestamp() * 1_000_000)

        def build_config(server_id: int | None, public_options: dict[str, str]) -> ApplyConfig:
            return ApplyConfig(
                pipeline_id=self.pipeline_id, lake_root=self.lake_root, storage_options=public_options,
                tables=tuple(self.tables), start_gtids=segment.start, mode="segment",
                segment_end_us=segment_end_us, batch_max_seconds=self.batch_max_seconds,
                soft_deletes=self.soft_deletes, server_id=server_id, rebase=plan.rebase,
                keep_members=plan.keep_members, schema_changes=self.schema_changes,
                statement_changes=self.statement_changes, pause=run.actions.pause,
                resume=run.actions.resume, run_id=str(run.context["run_id"]),
                progress_interval_s=self.progress_interval_s, unsettled=unsettled,
            )  # fmt: skip

        return build_config

    def planned_lineage(self) -> TaskLineage:
        """The MySQL tables read, their target and changelog tables written."""
        return self.source_to_lake_lineage(self.tables)

    def _apply_nothing(self, context: Any, placement: Placement) -> JsonObject:
        """A run that applies nothing returns the record that holds its interval, without Spark.

        A covered run skips the tasks after this one (module doc): the covering run's own ran at this
        position. A re-run of a published interval runs them: a clear is a request to check again (a
        verification that failed, with ``verify_repair`` set since)."""
        record = placement.record
        assert record is not None
        if placement.kind == "rerun":
            push_again(context["ti"], record, self.log)
        republished = self._emit_asset_events(context, record.to_dict())
        interval_end = context["data_interval_end"].isoformat()  # as "this run: ..." says it
        skipped = sorted(self.get_flat_relative_ids(upstream=False)) if placement.kind == "covered" else []
        if skipped and self.skip_downstream_when_covered:
            self.log.info(
                "skipped: %s: the lake's position did not move since run %s, whose own tasks ran there",
                ", ".join(skipped), record.run_id,
            )  # fmt: skip
            self.log.info("Summary: nothing applied: %s", placement.describe(interval_end))
            # Raising skips them and ends this task green; the return value is pushed here, then.
            context["ti"].xcom_push(key="return_value", value=republished)
            raise DownstreamTasksSkipped(tasks=skipped)
        self.log.info("Summary: nothing applied: %s", placement.describe(interval_end))
        return republished

    def _emit_asset_events(self, context: Any, record: JsonObject) -> JsonObject:
        """Fill the events of the lake table outlets from the run's record (:mod:`..runs.assets`)."""
        assets.emit_run_events(context, self.outlets, record, lake_root=self.lake_root, tables=self.tables)
        return record

    def _reload_rows(self, requests: Sequence[ResnapshotRequest]) -> list[JsonObject]:
        """Re-load the key ranges ``requests`` name at the lake's position (:mod:`.row_reloads`)."""

        def engine() -> EngineProcess:
            self._engine = EngineProcess(self.log, self.task_id)
            return self._engine

        return reload_rows(
            requests,
            ReloadTarget(
                pipeline_id=self.pipeline_id, lake_root=self.lake_root, storage_options=self.storage_options,
                lake_conn_id=self.lake_conn_id, mysql_cdc_conn_id=self.mysql_cdc_conn_id,
                chunk_size=self.chunk_size, soft_deletes=self.soft_deletes,
            ),
            engine,
            self.log,
        )  # fmt: skip

    def on_kill(self) -> None:
        super().on_kill()
        if self._engine is not None:
            self._engine.kill()

    def _snapshot(self, tables: Sequence[str], *, restart: bool) -> SnapshotResult:
        """Snapshot ``tables`` on Spark (again, from scratch, with ``restart``); the snapshot's result."""
        return run_snapshot(
            self, tables=tuple(tables), lake_root=self.lake_root, storage_options=self.storage_options,
            lake_conn_id=self.lake_conn_id, chunk_size=self.chunk_size, restart=restart, base_server_id=None,
            mysql_cdc_conn_id=self.mysql_cdc_conn_id, progress_interval_s=self.progress_interval_s,
        )  # fmt: skip

    def _absent_tables(self) -> frozenset[str]:
        """Configured tables the server does not have (dropped or renamed after they joined)."""
        return MySqlCdcHook(self.mysql_cdc_conn_id).get_missing_tables(self.tables)

    def _apply(self, build_config: ConfigBuilder) -> tuple[ApplyResult, GtidSet]:
        """Apply the segment; re-snapshot and join the tables a schema change took out, then continue.

        Also returns what earlier tries of the run applied of it (:mod:`..runs.run_counts`): what the
        lake held beyond the run's start before this try's first application started, and all that an
        application whose result this try adopted applied (it outlived an earlier try's task process).
        """
        applications = [self._apply_once(build_config)]
        earlier = run_counts.earlier_tries(applications[0])
        if self.adopted_from is not None:
            earlier |= applications[0].end_gtids - applications[0].requested_start
        for _ in range(self.max_resnapshot_rounds):
            waiting = applications[-1].to_resnapshot
            if not waiting:
                return ApplyResult.combine(applications), earlier
            self.log.info(
                "Snapshotting %s again after a schema change, then applying on so they join this run",
                ", ".join(waiting),
            )
            self._snapshot(waiting, restart=True)
            applications.append(self._apply_once(build_config))
            if self.adopted_from is not None:
                earlier |= applications[-1].end_gtids - applications[-1].resumed_from
        waiting = applications[-1].to_resnapshot
        if waiting:
            raise ResnapshotLoopError(
                f"{', '.join(waiting)} changed shape again during each of {self.max_resnapshot_rounds} "
                "re-snapshots in this run (a migration still running?). Nothing is lost: they are out of "
                "the pipeline, the other tables are exact at the lake's position. Clear this task when "
                "the migration is over; the next attempt snapshots them again."
            )
        return ApplyResult.combine(applications), earlier

    def _apply_once(self, build_config: ConfigBuilder) -> ApplyResult:
        return apply_binlog(
            self,
            build_config,
            mysql_cdc_conn_id=self.mysql_cdc_conn_id,
            storage_options=self.storage_options,
            lake_conn_id=self.lake_conn_id,
            catchup_parallelism=self.catchup_parallelism,
            report=False,
        )

    def _segment_end(self, context: Any, placement: Placement) -> datetime.datetime:
        """The run's interval end, or, for a forward run that starts a backlog late, the time it starts.

        Each run has a fixed cost (four task processes and a spark-submit: 25-40 s on 2 cores). Runs
        queued behind a slow one would each pay it for one interval and fall further behind; the
        first of them takes the whole backlog instead, in one catch-up batch.

        A run carrying its conf's actions past a record that covers its interval (``overtaken``:
        :mod:`~airflow_mysql_cdc.runs.run_placement`) ends when it starts too: its interval end
        lies before the head's, where no segment can end.
        """
        interval_end = context["data_interval_end"]
        if placement.overtaken is not None:  # to the microsecond: the head may end in this second
            return datetime.datetime.now(datetime.UTC)
        late = datetime.datetime.now(datetime.UTC) - interval_end
        threshold = self.catch_up_backlog_after
        if placement.kind != "forward" or threshold is None or late <= threshold:
            return interval_end
        until = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        self.log.info(
            "This run starts %s after its interval end, more than one schedule interval: it catches up "
            "the backlog to %s, so the runs queued behind it find their intervals covered",
            human_duration(late.total_seconds()),
            until.isoformat(),
        )
        return until


@dataclass(frozen=True)
class _Segment:
    """Where the run's segment starts (:meth:`~..runs.segment.SegmentPlan.segment_start`) and ends."""

    start: GtidSet
    end: datetime.datetime
