"""Hooks: everything that turns an Airflow connection into something the engine can use.

- ``mysql_cdc``: :class:`MySqlCdcHook`, a ``mysql_cdc`` connection as a
  :class:`~airflow_mysql_cdc.engine.values.endpoint.MySqlEndpoint` (the reader's server_id, TLS).
- ``gtid_conditions``: the GTID questions the sensors and the trigger ask the server (reached,
  resumable); one implementation for poke mode and deferral.
- ``spark_submit``: :class:`MySqlCdcSparkSubmitHook`, a ``SparkSubmitHook`` that owns the process
  group and the return code and passes secrets only in the process environment, never in argv.
- ``spark_defaults``: the Spark properties every application runs with unless the user says
  otherwise (the driver's Python, the UI off, local-disk encryption on), and the driver's environment.
- ``engine_process``: an engine application run as a plain process (maintenance, verification), the
  process group, output, exit code and stop owned here, as ``SparkSubmitHook`` owns spark-submit's.
- ``attempt_marker``, ``attempt_recovery``: each application's work dir with the marker naming the
  attempt that started it, and the next attempt's recovery of one a killed attempt left (adopted or
  stopped, never run beside it; ``/proc`` and process groups live here only).
- ``spark_output``: spark-submit's output in the task log at each line's level, and the log4j2
  configuration that keeps Spark's own loggers at WARN unless the user has one.
- ``spark_distribution``: what the local Spark distribution's configuration folder sets.
- ``lake_storage``: an ``aws`` connection as the lake's secret storage options.
- ``lineage``: the tables a hook's connection was used for, reported to Airflow's hook lineage
  collector (``report_tables_read`` / ``report_tables_written`` on the two hooks above).
- ``metrics``: the catalogue of every metric the package emits (names, types, tags) and the one
  function that emits them, for the operators and the sensors.
- ``engine_archive``: the engine zipped once per installed version, shipped to a cluster's executors.
- ``connection_errors``: a source connection that cannot be opened, as the error a user reads
  (naming the connection id and the fix) and whether a retry can help.
- ``next_steps``: how to take in Airflow the next step an engine error names by its meaning
  (re-snapshot these tables: a run conf or the snapshot operator; run again: clear the task).

Guarded by ``tests/unit/airflow/hooks/`` and the spark-submit recorder test
(``tests/unit/airflow/hooks/test_spark_submit.py``).
"""
