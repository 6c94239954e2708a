"""lake/state/: the pipeline's own state in its lake, kept where Delta maintenance never removes it.

Reading order:

- ``store``           :class:`~.store.LakeState`, the one door: opening, admission, the snapshot
                      writer and run placement ask it; its docstring maps each fact to its home.
- ``pipeline_state``  the one-row state table: position, epoch claims, lease, members, intents.
- ``lease``           one writer's hold on the pipeline (claim, commit, heartbeat, release): the sink,
                      a verification and a maintenance run each hold one.
- ``table_positions`` a target's or changelog's own applied set: its app transaction and the intents.
- ``snapshot_log``    snapshot records as rows, tied to the target by an app transaction chain.
- ``snapshot_records`` the records typed (a start, a finished chunk, the mark of none): their JSON,
                      the rows' ``record`` column, is what every version wrote.
- ``own_commits``     the version of the pipeline's last commit that may change a table's rows, named
                      in that commit's own app transaction.
- ``legacy``          facts a version 0.1 lake kept in commit history, read once to move them.

Invariant of the folder: nothing a later run needs is read from Delta commit history, which
checkpoints plus ``delta.logRetentionDuration`` let any writer delete; every fact is a row, a table
property or an app transaction (kept in every checkpoint).
Guarding tests: tests/integration/test_lake_state_durability.py (maintenance by another writer
between runs, the move of a version 0.1 lake), test_delta_sink.py, test_single_writer.py.
"""
