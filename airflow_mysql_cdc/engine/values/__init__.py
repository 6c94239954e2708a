"""Values: what crosses every boundary of the engine, immutable, with a JSON form, validated when read.

Reading order:
- ``gtid``: :class:`GtidSet`, the unit of progress of every watermark, checkpoint and stop rule
  (set algebra with intervals, parse/print exactly as MySQL does; tagged GTIDs refused by name).
  Guarded by ``tests/unit/test_gtid_set.py`` (properties against a brute-force model).
- ``gtid_ranges``: a closed segment cut into disjoint ranges for parallel readers
  (``test_ranges_are_disjoint_ordered_balanced_and_cover_exactly_the_segment``).
- ``endpoint``: :class:`MySqlEndpoint`, where a server is and how to log in; travels in the
  environment, never in argv (``tests/unit/test_endpoint.py``).
- ``tls``: how a connection is protected (the MySQL client's five ``ssl_mode`` values, one TLS
  context per process, PREFERRED that falls back on a server without TLS) and login failures that
  say what to do (``tests/unit/test_endpoint.py``, ``tests/integration/test_managed_mysql.py``).
- ``checkpoint``: the record a run publishes, and how its start is agreed between two witnesses
  (``tests/unit/test_checkpoint_record.py``).
- ``resumability``: can a checkpoint resume on this server, from three GTID sets
  (``test_purged_is_judged_before_behind_because_waiting_cannot_fix_it``).
- ``headroom``: how long until the binlog a checkpoint needs may be purged, and the one rule that
  judges it against the schedule (``tests/unit/test_binlog_headroom.py``); ``staleness``: a checkpoint
  that has not advanced while the server has (``tests/unit/test_stale_position.py``).
- ``json_values``: ``JsonObject`` and ``RowValues``, the names of the two untyped dicts left: a value
  at a JSON edge (XCom, a result file, an event, a ``to_dict``) and one row image of the source.

Invariant: this folder imports nothing of the engine but :mod:`..errors`; it opens no connection
except :meth:`MySqlEndpoint.connect`.
"""
