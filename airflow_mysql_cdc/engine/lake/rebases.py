"""A table moved onto another GTID history by an operator's confirmed ``rebase_checkpoint``.

Invariant: a snapshot's consistent point bounds where a run may end only while it is in the
pipeline's history. A confirmed rebase moves the pipeline onto another history (a source rebuilt
from a backup: another server UUID), with the operator vouching that each member table equals its
source at the new start; its snapshot's watermarks then name transactions the new source never
had, and a run waiting for them would wait forever. The rebase marks each member's target
(``airflow_mysql_cdc.rebased``: the snapshot id it vouches for, the new start, the run), and that
snapshot's consistent point no longer counts (:func:`~..apply.admission.consistent_point`). A new
snapshot of the table has another id, so its own consistent point counts again.

The mark is a table property: in every Delta checkpoint, never lost to log clean-up.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from deltalake import DeltaTable

REBASE_PROPERTY = "airflow_mysql_cdc.rebased"


@dataclass(frozen=True)
class RebaseMark:
    snapshot_id: str
    """The snapshot whose rows the operator vouched for at :attr:`position`."""
    position: str
    run_id: str


def rebase_of(table: DeltaTable) -> RebaseMark | None:
    text = table.metadata().configuration.get(REBASE_PROPERTY)
    return RebaseMark(**json.loads(text)) if text else None


def mark_rebased(table: DeltaTable, mark: RebaseMark) -> None:
    table.alter.set_table_properties(
        {REBASE_PROPERTY: json.dumps(asdict(mark), sort_keys=True)}, raise_if_not_exists=False
    )
