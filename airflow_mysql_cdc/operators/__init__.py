"""Operators: orchestration and XCom; the data path runs in the engine under spark-submit.

- ``prerequisites``: fail a run early, with every server setting to fix.
- ``spark_application``: the shared machinery of the two Spark operators (config file, secrets in
  the environment, a failure that no retry can fix fails at once, decided by the engine's
  :class:`~airflow_mysql_cdc.engine.errors.ExitCode`).
- ``snapshot`` and ``binlog_apply``: the two applications as operators for custom DAGs;
  ``verify`` and ``maintenance``: the verification and the lake's upkeep (plain processes).
- ``engine_process``: the operators whose application is a plain process; the process itself is
  the hook's (:mod:`airflow_mysql_cdc.hooks.engine_process`): operators hold no process supervision
  (tests/unit/test_package_layers.py).
- ``replicate``: the example DAG's one chain step (place, plan, snapshot, apply, publish); a covered
  run skips the tasks after it. ``row_reloads``: a conf's re-load of key ranges, before the segment.
- ``run_record_link``: the replicate task's "Run record" extra link, to its XCom tab (the record).
- ``lineage``, ``metrics``, ``spark_openlineage``: what the operators report after an application's
  result is known: OpenLineage datasets (the facet methods), Airflow metrics, and the Spark
  provider's OpenLineage injection with its secrets kept off argv (docs/metrics.md).
- ``links``: the tasks' extra links (lake location, Spark UI); ``table_lists``: a ``tables``
  argument checked when the DAG is parsed, or rendered and checked at run time when templated.
- ``lake_target``: the lake arguments every operator takes (``lake_root``, public
  ``storage_options`` with a credential refused at parse, ``lake_conn_id``), kept and opened in one
  place.

Guarded by ``tests/unit/airflow/operators/`` (template rendering, exit codes) and the DAG tests.
"""
