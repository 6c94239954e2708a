"""apply/: the binlog application, from a configuration to a lake at an exact GTID set.

Reading order (each module states its invariant in full):

- ``config``          ApplyConfig and ApplyResult: typed GtidSets; JSON text only in from_dict/to_dict.
- ``opening``         open_pipeline: claim the sink, resume point, consistent point, admission; a
                      joining table's catch-up is its own read (its table, its WithinGtidSet rule).
- ``admission``       a table joins only when it would miss and double nothing (join_gap).
- ``snapshot_filter`` changes a table's snapshot chunk already holds are dropped, per chunk watermark.
- ``schema_changes``  a DDL applied at its position (the batch before it committed first), and rows
                      of a shape the stream has not seen checked against the lake's columns.
- ``schema_decisions`` what one DDL does to one table: evolve in place, truncate, leave, re-snapshot.
- ``statement_changes`` a statement-logged change of a tracked table: nothing (left, or its snapshot
                      holds the GTID), stop, or the table leaves for a re-snapshot before it.
- ``batches``         THE batch applier: every batch's position is ``resume point ∪ GTIDs fed``,
                      cut between transactions only; used by both appliers below.
- ``reading``         one read into an opened sink: reader thread, batches cut by rows and time.
- ``batch_deadline``  when a live batch is cut: its oldest transaction in Delta batch_max_seconds after
                      it was read (the recent commit time comes off the bound).
- ``single_reader``   run_apply: open, then read until the configured stop rule.
- ``parallel_catchup``, ``range_reader``: a closed segment read by K GTID ranges, fed in binlog
                      order to the same batch applier; any doubt falls back to the single reader.

Invariant of the folder: the sink receives whole transactions in binlog order with exact positions,
so the lake's applied set is always a binlog prefix and a restart replays nothing twice.
Guarding tests: tests/integration/test_apply_loop.py, test_parallel_catchup.py (same lake as the
single reader), test_table_admission.py, test_kill9_recovery.py, test_single_writer.py;
tests/unit/test_table_admission_rules.py.
Imports: values, runtime, mysql, binlog, lake, snapshot (never entrypoints or Airflow).
"""
