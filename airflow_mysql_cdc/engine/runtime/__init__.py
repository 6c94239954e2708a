"""Runtime: how the engine's work is run, apart from what the work is.

- ``spark_tasks``: the one place that talks to Spark. :class:`SparkTasks` runs picklable tasks (snapshot
  windows, GTID-range readers) one per partition and returns their results in order; the driver
  commits them. Guarded by ``test_spark_standalone.py`` (a real standalone cluster) and
  ``test_parallel_catchup_in_spark_local_2_tasks_gives_the_same_lake_as_the_single_reader``.
- ``executor_probe``: what an executor's Python can import, asked before any real task runs there.
- ``executor_secrets``: how the credentials a task needs reach the executors, never inside a task.
- ``gc_pause``: the one way the cyclic garbage collector is paused (a window's fetch, a rows event's
  decoding, the apply loop's micro-batches), always restored to its prior state.
- ``progress``: when the snapshot and the binlog application log a progress line (every 30 s, and
  at the end).

Invariant: nothing here knows MySQL, the binlog or the lake; pyspark is imported only when a Spark
session is created, so the engine imports without it.
"""
