"""lake/: the Delta tables a pipeline writes, and the contract of whatever writes them.

Reading order (each module states its invariant in full):

- ``sink``           the Sink protocol: everything the apply code calls (open/claim, epoch, heartbeat,
                     release, membership, apply → BatchResult); nothing else is used.
- ``layout``         where each table lives under the lake root (a public contract; URIs, no pathlib).
- ``delta_layout``   the metadata columns and Delta storage types (a public contract).
- ``change_table``   a micro-batch per table as one Arrow table; last write per key wins.
- ``delta_sink``     the delta-rs sink: data and position commit together per table, replays are
                     recognised, a fenced writer fails before it moves a table.
- ``pipeline_state`` the state table: applied set, epoch claims, lease, member tables.
- ``storage``        object-store options, public and secret; secrets never in files or argv.
- ``checkpoint_log``, ``run_placement``: the published chain of run records and where a run stands.
- ``compare``        a source table against its lake copy (tests, verification).

Invariant of the folder: after every committed batch, each table and the state name the GTID set
they reflect, and at most one writer makes progress.
Guarding tests: tests/integration/test_delta_sink.py, test_single_writer.py, test_kill9_recovery.py;
tests/unit/test_change_tables.py, test_lake_layout.py, test_run_placement.py, test_lake_storage_options.py.
Imports: values, runtime, mysql, binlog (never snapshot, apply, entrypoints or Airflow).
"""
