"""lake/: the Delta tables a pipeline writes, and the contract of whatever writes them.

Reading order (each module states its invariant in full):

- ``sink``           the Sink protocol: everything the apply code calls (open/claim, epoch, heartbeat,
                     release, membership, apply → BatchResult, schema changes); nothing else is used.
- ``evolution``      what a DDL does to one table (``TableEvolution``): the type the decision, the sink
                     and the run's result share; no deltalake, no Arrow at import.
- ``table_shape``    the one rule for a table's shape: ``compatibility(recorded, now)`` → typed findings;
                     each caller (snapshot restart, swap check, ``fits_lake``) accepts what it can.
- ``layout``         where each table lives under the lake root (a public contract; URIs, no pathlib).
- ``delta_layout``   the metadata columns and Delta storage types (a public contract).
- ``change_table``   a micro-batch per table as one Arrow table; last write per key wins (and the
                     first says whether the key existed: what the MERGE must report).
- ``batch_check``    every batch checks itself: the MERGE's counts against what its events imply.
- ``change_waves``   a catch-up's wave per table: last rows per key in memory, changelog rows spilled.
- ``delta_sink``     the delta-rs sink: data and position commit together per table, replays are
                     recognised, a fenced writer fails before it moves a table.
- ``batch_commit``   the sink's commit skeleton, written once: intent, tables behind the fence, position.
- ``evolution_writes`` the Delta writes of a ``TableEvolution`` (columns added, truncate, departure).
- ``changelog_fitting`` a batch's rows shaped for its changelog (retyped columns, dropped ones).
- ``departures``     the mark a table that left the pipeline carries (or that was stopped).
- ``table_stops``    a table whose lake copy is wrong stops, alone: after a batch, or at the open.
- ``outside_changes`` another writer's commit since the pipeline's own last one: neutral, or a stop.
- ``pauses``         the mark a table an operator paused carries (its frozen position).
- ``table_handles``  the tables one sink writes: versions seen, other writers' rearrangements accepted.
- ``table_writes``   one batch of one table as one commit: the target's MERGE, the changelog's append.
- ``file_statistics`` which columns keep Delta file statistics: only those delta-rs records exactly.
- ``merge_plan``     the MERGE's predicate and mode, so delta-rs reads only the files a batch touches.
- ``data_files``     Parquet files an executor writes, committed later by the driver.
- ``rebases``        the mark of a table an operator's confirmed rebase moved onto another history.
- ``run_changes``    what a run's transactions left in the changelog, counted per operation.
- ``foreign_commits`` other writers: data-neutral rearrangements, and table features delta-rs can write.
- ``state/``         the pipeline's state, one door (``LakeState``), nothing in commit history alone.
- ``maintenance/``   the lake's upkeep under the pipeline's lease.
- ``storage``        object-store options, public and secret; secrets never in files or argv; the one
                     refusal of a credential in any configuration.
- ``application_config`` what every application's configuration shares: the lake, its options, its file.
- ``checkpoint_log`` the published chain of run records (where a run stands in it is decided on the
                     Airflow side: ``runs/run_placement``).
- ``compare``        a source table against its lake copy (tests, verification).

Invariant of the folder: after every committed batch, each table and the state name the GTID set
they reflect, at most one writer makes progress, and a table whose rows the pipeline cannot vouch
for (a MERGE that did not do what its batch implies, another writer's data change) is not streamed.
Guarding tests: tests/integration/test_delta_sink.py, test_single_writer.py, test_kill9_recovery.py,
test_lake_state_durability.py, test_lake_maintenance.py, test_concurrent_maintenance.py,
test_foreign_commits.py, test_catch_up_waves.py, test_checkpoint_log.py, test_schema_change_replay.py,
test_batch_self_check.py, test_outside_changes.py; tests/unit/test_batch_check.py,
test_change_tables.py, test_change_waves.py, test_lake_layout.py,
test_lake_storage_options.py, test_table_shape_compatibility.py, apply/test_apply_result.py.
Imports: values, runtime, mysql, binlog (never snapshot, apply, entrypoints or Airflow).
"""
