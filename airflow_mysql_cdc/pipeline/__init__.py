"""The pipeline: the example DAG and the pieces a custom DAG reuses, on top of the operators.

Reading order:

1. ``config``: :class:`~airflow_mysql_cdc.pipeline.config.PipelineConfig`, the example DAG's JSON
   configuration file (no credentials in it: they live in Airflow connections).
2. ``dag``: :func:`~airflow_mysql_cdc.pipeline.dag.build_pipeline_dag`, the DAG
   ``check_prerequisites >> load_checkpoint >> resumability >> replicate`` that
   ``dags/mysql_cdc_daily.py`` builds from the configuration.
3. ``checkpoint_chain``: where a run stands in the chain of records kept in the lake
   (:func:`~airflow_mysql_cdc.pipeline.checkpoint_chain.locate_run`, ``load_checkpoint``) and the
   record it publishes (``publish_checkpoint``); a custom DAG calls these two (docs/custom-dags.md).
4. ``segment``: which tables a run snapshots (``plan_segment``) and the GTID set its segment starts
   from (``segment_start``: the checkpoint, or the stream start of the snapshots the run took).

Invariants:

- A run places itself by its data interval end alone; no run waits for another (no
  ``depends_on_past``), so failed, retried, cleared and backfilled runs never rewrite a record.
- A record is published only when the lake holds its end set and every table is exact there
  (the snapshots' consistent point).
- One run at a time is in ``replicate`` (``max_active_tis_per_dag=1``): it decides, writes and
  publishes in one task.
- Parsing the DAG file imports no Delta, Arrow or Spark: the DAG file is parsed for every task,
  and those imports happen inside the functions that read the lake.

Guarding tests: tests/unit/airflow/pipeline/ (the DAG's shape, its configuration, the segment's
start, the parse without Delta/Arrow/Spark), and end to end under ``dag.test`` and a real scheduler:
tests/integration/test_pipeline_dag.py, test_pipeline_dag_recovery.py,
test_pipeline_dag_consistent_point.py, test_pipeline_under_the_scheduler.py, test_custom_dag_example.py.
"""
