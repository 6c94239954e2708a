"""verify/: the lake compared with the live source at the pipeline's position, and repaired.

Reading order:

- ``settings``       the pipeline JSON's ``verify*`` keys, typed and checked once.
- ``config``         the verify application's configuration: pipeline, lake, tables, typed settings.
- ``source_chunks``  a chunk of the source read without locks between two ``gtid_executed`` reads.
- ``changed_keys``   each key changed after the position, with its row there: the before image of
                     its first change (the binlog, read once); DDL and statement-logged changes.
- ``comparable``     both sides in one form: Delta's storage types, an order-independent checksum,
                     a row diff, examples (masked on request).
- ``lake_rows``      the target's live rows sorted once by key, sliced by chunk; keys held twice.
- ``table_check``    one table's chunks compared at the position, keys changed after it through
                     their before images: the no-false-positive argument, point by point.
- ``repair``         exactly the differing keys set to their values at the position, one MERGE (a key
                     held twice loses its copies first).
- ``rotation``       where a sampled verification goes on, so runs cover the key space in turn.
- ``pending``        the chunks a verification leaves to the next (proven different, keys left out).
- ``verify_log``     ``_cdc/verify``: each table's latest result, cursor and pending chunks, one row each.
- ``report``         statuses, coverage, the summary, and the failure message a user reads: the
                     application's typed result, read back by the operator (``from_dict``).
- ``planning``       which tables can be compared, and what of each, in which order.
- ``run``            the lease, the order of it all, repair, what is kept for the next one.

Invariant of the folder: a table is reported different only when the difference is proven at the
position the lake says it holds; everything undecidable is ``inconclusive``, never a failure, and
never silent: a table not compared, or compared in part, is a warning, in the summary, and a
coverage metric.
Guarding tests: tests/integration/test_verify_lake.py, test_pipeline_dag.py (the daily test: the
shipped default, a cleared try repairing), test_pipeline_dag_statement_changes.py (a table
re-snapshotted within a run); tests/unit/verify/test_verify_logic.py.
Imports: values, runtime, mysql, binlog, lake, snapshot (never apply, entrypoints or Airflow).
"""
