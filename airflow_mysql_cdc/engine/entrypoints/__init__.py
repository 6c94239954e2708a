"""Process entry points run by spark-submit (the files under spark_apps/ are two-line shims).

- ``snapshot_to_delta``: snapshot the configured tables (windows as Spark tasks).
- ``binlog_to_delta``: apply the binlog segment (the single reader, or parallel catch-up).
- ``verify_lake`` and ``maintain_lake``: the verification and the lake's upkeep, plain processes
  (no Spark), under the pipeline's lease.
- ``common``: arguments, logging, the atomic result file, and the error report whose exit code comes
  from the error's class (:class:`..errors.ExitCode`).

Invariant: nothing secret is in argv or the config file: the endpoint and the lake's secret storage
options come from the environment; the result file appears only after everything it reports is
committed.
"""
