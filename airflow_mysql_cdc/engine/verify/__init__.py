"""verify/: the lake compared with the live source at the pipeline's position, and repaired.

Reading order:

- ``settings``       the pipeline JSON's ``verify*`` keys, typed and checked once.
- ``source_chunks``  a chunk of the source read without locks between two ``gtid_executed`` reads.
- ``changed_keys``   the keys each transaction after the position changed (the binlog, read once).
- ``comparable``     both sides in one form: Delta's storage types, an order-independent checksum,
                     a row diff, examples (masked on request).
- ``lake_rows``      the target's live rows placed in the chunks MySQL's key order puts them in.
- ``table_check``    one table's chunks compared, leaving out keys changed after the position: the
                     no-false-positive argument, point by point.
- ``repair``         exactly the differing keys set to their values at the position, one MERGE.
- ``rotation``       where a sampled verification goes on, so runs cover the key space in turn.
- ``verify_log``     ``_cdc/verify``: each table's latest result and cursor, one row each.
- ``report``         statuses, the summary, and the failure message a user reads.
- ``run``            the lease, which tables can be compared, the order of it all.

Invariant of the folder: a table is reported different only when the difference is proven at the
position the lake says it holds; everything undecidable is ``inconclusive``, never a failure.
Guarding tests: tests/integration/test_verify_lake.py, test_pipeline_dag.py (the daily test);
tests/unit/verify/test_verify_logic.py.
Imports: values, runtime, mysql, binlog, lake, snapshot (never apply, entrypoints or Airflow).
"""
