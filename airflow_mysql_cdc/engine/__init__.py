"""The CDC engine: from MySQL's binlog and tables to exact Delta tables. It never imports Airflow.

It runs inside Spark drivers and executors where Airflow is not installed
(``tests/unit/test_engine_isolation.py`` enforces that); the Airflow layer talks to it only through
the entry points and the lake.

The layers, each importing only those before it (a folder's ``__init__`` is its own map)::

    errors ← values, runtime ← mysql ← binlog ← lake ← snapshot ← apply, verify ← entrypoints

- ``errors``: one root, :class:`~.errors.CdcError`. The error's class sets the process's exit code
  (:class:`~.errors.ExitCode`: 2 configuration, 3 fenced by another run, 4 lake/start mismatch,
  5 binlog unreadable, 1 anything else) and whether a retry can help (only 1 and 3).
- ``values/``: GTID sets and ranges, the MySQL endpoint, the checkpoint record, resumability.
- ``runtime/``: where Spark comes in (:mod:`.runtime.spark_tasks`), the garbage-collector pause, and
  the cadence of progress lines (:mod:`.runtime.progress`).
- ``mysql/``: the source's schema (one column model), type mapping to Arrow, server state, grants,
  prerequisites.
- ``binlog/``: the replication stream read into committed transactions of canonical values.
- ``snapshot/``: tables read in chunks between GTID watermarks, without locks.

The binlog path, in reading order:
``binlog/stream`` (the dump connection) → ``binlog/reader`` (events to committed transactions) →
``binlog/decoding/`` (row images to canonical values) → ``binlog/stop_rules`` (where a segment ends)
→ ``apply/`` (open the pipeline, admit tables, read, apply batches) → ``lake/delta_sink`` (data and
the applied GTID set committed together, exactly once).

The snapshot path, in reading order:
``snapshot/chunks`` → ``snapshot/window`` (a chunk between two GTID watermarks, without locks) →
``snapshot/runner`` (windows as Spark tasks) → ``snapshot/lake_commits`` (chunks in the target, their
records in its snapshot log, tied by app transactions) → ``snapshot/change_filter`` (the stream after it).

The lake (``lake/``): the ``Sink`` contract, the Delta layout, change tables and waves, the pipeline's
state (``lake/state/``: nothing in commit history alone), maintenance, the checkpoint log, the
comparison with the source; and the checks that stop a table whose copy is wrong, alone: every
batch's MERGE against its events (``lake/batch_check``), every other writer's commit since the
pipeline's own (``lake/outside_changes``).

The verification (``verify/``): the lake compared with the source at the pipeline's position while
writes go on, a key changed after it through the binlog's image of its row there
(``verify/table_check``), with repair of exactly the differing keys (``verify/repair``); its map is
``verify/__init__``.

Entry points (``entrypoints/``): ``snapshot_to_delta`` and ``binlog_to_delta``, run by spark-submit;
``maintain_lake`` and ``verify_lake``, run as plain processes.
"""
