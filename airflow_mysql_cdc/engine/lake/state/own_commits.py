"""Which version of a target or changelog the pipeline itself made last: its own-commit app transaction.

Invariant: every commit the pipeline makes to a target or changelog that may change its rows or
columns (a batch's MERGE and append, a changelog's added columns, a schema change's steps, a
snapshot's overwrite and chunks, a verification's repair) carries the Delta app transaction
``(OWN_COMMIT_APP_ID, v)`` where ``v`` is the version that very commit creates
(:func:`own_commit`). So :func:`last_own_version` is the version after the pipeline's last such
commit, whichever of its writers made it (the binlog application, a joining table's catch-up under
its own state, the snapshot writer, ``verify_lake``): every later version was made by someone else,
or is one of the pipeline's commits that cannot change rows (a table property it sets: a pause, a
departure). What the sink makes of those later commits is :mod:`..outside_changes`.

Why ``v`` is known before the commit: every such commit is made with ``max_commit_retries=0`` from
a table object at version ``v - 1``, and delta-rs then commits at exactly ``v`` or fails (a
concurrent commit took ``v``: the pipeline's fence, :mod:`..table_handles`). :func:`own_commit`
refuses properties that would let it retry elsewhere.

Why an app transaction, not commit history or a row of the state table: app transactions are kept
in every Delta checkpoint (``delta.setTransactionRetentionDuration`` is refused,
:mod:`..foreign_commits`), so log clean-up and vacuum never lose it, and it is written in the same
atomic commit as the change it describes, so no crash can separate them and no writer with a state
of its own has to hand it to another. Guarded by
``tests/integration/test_outside_changes.py``.
"""

from __future__ import annotations

from deltalake import CommitProperties, DeltaTable, Transaction

OWN_COMMIT_APP_ID = "airflow_mysql_cdc:own_commit"
"""The app transaction naming the version of the pipeline's last commit that may change rows."""


def own_commit(properties: CommitProperties | None, table: DeltaTable | None) -> CommitProperties:
    """``properties`` for the next commit to ``table`` (None: a commit that creates it, version 0),
    with the own-commit app transaction naming the version that commit creates."""
    base = properties if properties is not None else CommitProperties(max_commit_retries=0)
    if base.max_commit_retries != 0:
        raise ValueError(
            "a pipeline commit that records its own version must not retry (max_commit_retries=0): "
            "a retry would land on a later version than the one it names"
        )
    others = [txn for txn in base.app_transactions or [] if txn.app_id != OWN_COMMIT_APP_ID]
    version = table.version() + 1 if table is not None else 0
    return CommitProperties(
        custom_metadata=base.custom_metadata,
        max_commit_retries=0,
        app_transactions=[*others, Transaction(OWN_COMMIT_APP_ID, version)],
    )


def last_own_version(table: DeltaTable) -> int | None:
    """The version of the pipeline's last commit to ``table`` that may change rows (None: none
    recorded: a table written before this version of the package)."""
    return table.transaction_version(OWN_COMMIT_APP_ID)
