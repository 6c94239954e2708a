"""The contract every sink keeps, so a Spark-native ``MERGE INTO`` sink can be added beside Delta's.

A sink receives micro-batches of whole committed transactions in binlog order, together with the
reader's position after the batch, and must:

- commit each batch's data together with that position (a replay is then recognisable);
- on :meth:`Sink.open`, return the position to resume from: its own applied set when the requested
  start is contained in it, and refuse (``SinkBehindError``/``SinkDivergedError``) otherwise;
- let only one writer make progress: a second instance fails at start while the first holds the
  lease (``PipelineBusyError``), and a writer that lost the pipeline fails at its next commit
  (``PipelineFencedError``).

Only the delta-rs sink (:class:`~airflow_mysql_cdc.engine.lake.delta_sink.DeltaSink`) exists:
a catalog ``MERGE INTO`` sink cannot be tested on this project's machines, so none is shipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from airflow_mysql_cdc.engine.binlog.changes import Transaction
from airflow_mysql_cdc.engine.errors import LakeMismatchError
from airflow_mysql_cdc.engine.values.gtid import GtidSet


class SinkBehindError(LakeMismatchError, RuntimeError):
    """The run asked to start after transactions the sink never received: applying would leave a gap."""


class SinkDivergedError(LakeMismatchError, RuntimeError):
    """The requested start and the sink's applied set are not ordered: different histories."""


class Sink(Protocol):
    def open(self, requested_start: GtidSet) -> GtidSet: ...

    @property
    def applied_gtids(self) -> GtidSet: ...

    def apply(self, transactions: Sequence[Transaction], position_after: GtidSet) -> Any: ...
