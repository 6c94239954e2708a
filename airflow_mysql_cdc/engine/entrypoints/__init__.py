"""Process entry points run by spark-submit (the files under spark_apps/ are two-line shims).

- ``snapshot_to_delta``: snapshot the configured tables (windows as Spark tasks).
- ``binlog_to_delta``: apply the binlog segment (the single reader, or parallel catch-up).
- ``common``: arguments, logging, the atomic result file, and the error report whose exit code comes
  from the error's class (:class:`..errors.ExitCode`).

Invariant: nothing secret is in argv or the config file: the endpoint and the lake's secret storage
options come from the environment; the result file appears only after everything it reports is
committed.
"""
