"""Lock-free chunked snapshots bracketed by GTID watermarks (the algorithm: docs/snapshots.md).

Reading order:
1. ``chunks``: a table cut into key ranges, boundaries chosen by MySQL (its collation, its FLOAT).
2. ``key_order`` and ``key_codec``: keys ordered as MySQL orders them; bounds stored as exact JSON.
3. ``window``: one chunk read without locks between a low and a high GTID watermark, then made
   consistent as of the high watermark by the binlog between them.
4. ``window_ipc``: a finished window as one Arrow IPC stream (how a Spark task hands it back).
4b. ``window_task``: what an executor runs (a window on the worker's connection); it loads no
   deltalake, Spark or Airflow, so executors need only the engine's executor requirements.
5. ``runner``: plan or resume, run windows (in this process or as Spark tasks through
   :mod:`..runtime.spark_tasks`), commit each finished chunk.
5b. ``table_definition``: the definition a chunk was read with; a DDL mid-snapshot restarts it.
6. ``lake_commits``: a snapshot's rows and progress committed together into the table's own Delta
   history, so a killed snapshot resumes at its next unfinished chunk.
7. ``change_filter``: the stream after a snapshot drops the changes a chunk already reflects.
8. ``config`` and ``result``: the snapshot application's contract, what its operator writes and reads
   back (they import no Delta, Arrow or Spark, so the operator loads neither).

Invariant: chunk i holds the table's rows of its key range as of its high watermark H_i; streaming
from any position then applies to a row of chunk i only the transactions not in H_i, so each table is
exact once the stream's position contains every H_i (its consistent point). Guarded by
``test_windows_and_filtered_stream_equal_the_source_while_writers_race_them``,
``test_snapshot_during_writes_then_streaming_equals_the_source`` and
``test_killed_snapshot_resumes_at_the_next_unfinished_chunk``.

Imports: values, runtime, mysql, binlog, lake (the snapshot writes the table's Delta history, so it
sits above the lake); never apply.
"""
