"""Prerequisites: every reason a server cannot feed a pipeline, found in one round trip, each with its fix.

Reading order:
1. ``requirements``: the ONE table of required server settings (and the types the pipeline carries);
   the binlog stream re-checks its ``checked_by_stream`` rows before every read.
2. ``facts``: everything the checks need, read from the server in one place (the only module here
   that talks to MySQL; MySQL 8.0 variable names mapped to the new ones).
3. One small pure function per concern, each ``(facts, config) -> [CheckResult]``: ``settings``,
   ``retention``, ``replication`` (log_replica_updates, commit order, reader server_ids), ``access``
   (privileges, SELECT, each table's existence, row key and column types).
4. ``checks``: :data:`~.checks.CHECKS`, the registry in report order, and :func:`~.checks.evaluate`.
5. ``report``: the report the operator logs and fails on.

Guarded by ``tests/unit/test_prerequisite_rules.py`` (each rule on made-up facts, and
``test_the_report_and_the_binlog_stream_read_one_requirements_table``) and
``tests/integration/test_prerequisites_on_real_servers.py`` (facts read from misconfigured servers).
"""
