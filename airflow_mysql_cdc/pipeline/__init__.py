"""The pipeline: the example DAG and its configuration, on top of the operators.

Reading order:

1. ``config``: :class:`~airflow_mysql_cdc.pipeline.config.PipelineConfig`, the example DAG's JSON
   configuration file (no credentials in it: they live in Airflow connections).
2. ``dag``: :func:`~airflow_mysql_cdc.pipeline.dag.build_pipeline_dag`, the DAG
   ``check_prerequisites >> load_checkpoint >> resumability >> replicate >> maintain_lake >> verify_lake``
   (no ``verify_lake`` with ``verify: off``) that ``dags/mysql_cdc_daily.py`` builds from the
   configuration.
3. ``dag_docs``: the DAG's ``doc_md``, describing the pipeline from its configuration.
4. ``spark_settings``: the JSON's ``spark`` object (executors, memory, properties), checked at parse.
5. ``checkpoint_chain``: the 0.1 import path of :mod:`airflow_mysql_cdc.runs.checkpoint_chain`.

What a run decides (its place in the checkpoint chain, the record it publishes, its segment plan)
lives below the operators, in :mod:`airflow_mysql_cdc.runs`: the replicate operator and a custom DAG
use it too, and nothing below the pipeline imports the pipeline.

Invariants:

- A run places itself by its data interval end alone; no run waits for another (no
  ``depends_on_past``), so failed, retried, cleared and backfilled runs never rewrite a record.
- A record is published only when the lake holds its end set and every table is exact there
  (the snapshots' consistent point).
- One run at a time is in ``replicate`` (``max_active_tis_per_dag=1``): it decides, writes and
  publishes in one task.
- Parsing the DAG file imports no Delta, Arrow or Spark: the DAG file is parsed for every task,
  and those imports happen inside the functions of :mod:`airflow_mysql_cdc.runs.lake`.

Guarding tests: tests/unit/airflow/pipeline/ (the DAG's shape, its configuration, the parse
without Delta/Arrow/Spark), tests/unit/airflow/runs/ (the segment's start), and end to end under
``dag.test`` and a real scheduler: tests/integration/test_pipeline_dag.py, test_pipeline_dag_recovery.py,
test_pipeline_dag_consistent_point.py, test_pipeline_dag_unsigned_keys.py,
test_pipeline_under_the_scheduler.py, test_custom_dag_example.py.
"""
