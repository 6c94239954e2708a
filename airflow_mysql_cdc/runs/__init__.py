"""Runs: what one pipeline run decides on the Airflow side, below the operators that carry it out.

Reading order:

1. ``lake``: the worker's one door into the lake (the pipeline's state, the checkpoint log, run
   placement, snapshot progress, departures, upkeep bookkeeping); Delta and Arrow are imported only
   inside its functions, so parsing a DAG stays cheap.
2. ``checkpoint_chain``: where a run stands in the chain of records kept in the lake
   (:func:`~airflow_mysql_cdc.runs.checkpoint_chain.locate_run`, ``load_checkpoint``) and the record
   it publishes (``publish_checkpoint``); a custom DAG calls these two (docs/custom-dags.md).
   ``run_placement`` holds the pure rules of where a run stands (first, forward, rerun, covered,
   before the first) from the records alone; ``placing`` places the run by its interval end in the
   lake's log with them (a run without a logical date refused, one before the first interval
   skipped). ``run_record`` makes the record (its end set checked against the lake, its per-table
   facts read from it by ``record_facts``); ``run_counts`` counts what the run applied, every try's,
   for the replicate task's XCom ``applied``, metrics and ``Summary:`` line.
3. ``segment``: which tables a run snapshots and where its segment starts: ``plan_segment`` takes
   the run's ``RunOrigin`` (its checkpoint, or a first run) and gives a ``SegmentPlan`` (its start:
   the checkpoint, or the stream start of the snapshots the run takes).
   ``run_step``: the run as one typed step (``RunStep``: place, plan, push, publish) that the
   replicate operator composes with its snapshot and binlog application; dicts only at XCom.
4. ``status``: the read-only ``airflow-mysql-cdc status`` command: the chain and each table's state,
   through ``lake`` (tests/unit/airflow/runs/test_status_command.py).
5. ``actions``: what a run's conf asks (re-snapshot, pause, resume, rebase), checked before it acts.
6. ``record_facts``: the per-table facts of a run's record, read from the lake when it is made.
7. ``assets``: each lake table as an Airflow Asset, and the change feed each run's event names.
8. ``republish``: a re-run of a published interval pushes the run's other XComs (plan, snapshot,
   applied) again from its record, so a clear does not lose the run's story.

Layers: these modules import hooks and the engine, never sensors, operators or the pipeline; the
replicate operator and the pipeline's DAG import them (tests/unit/test_package_layers.py).

Guarded by tests/unit/airflow/runs/ (the segment's start and plan, run placement),
and end to end by the DAG tests (tests/integration/test_pipeline_dag*.py, test_custom_dag_example.py).
"""
