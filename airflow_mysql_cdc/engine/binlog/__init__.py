"""The binlog path: from a GTID set to whole, typed, committed transactions, or a typed failure.

Reading order (docs/binlog-application.md tells the algorithm):
1. ``stream``: the dump connection we own (``COM_BINLOG_DUMP_GTID`` from a GTID set, empty set
   included), its server settings check, reconnects, and the server_id rules.
2. ``internals``: every private part of mysql-replication / PyMySQL we touch, checked against the
   installed versions (``test_the_private_parts_we_use_exist_in_the_installed_libraries``).
3. ``reader``: the read: a short loop that fetches events and reconnects from the position, handing
   each event to ``events``, the one event handler (GTID, BEGIN, rows, COMMIT/XID, DDL, heartbeats;
   a compressed payload's events, unpacked by ``compressed_payload``, go through it too). What spans
   one transaction is ``transaction``'s ``OpenTransaction`` (GTID, rows, BEGIN body, schema change).
   Around them: position tracking (``position``), statements that end or change a transaction
   (``statements``), bounded memory (``backpressure``).
4. ``decoding/``: row images to values: the library's path and the compiled one, both ending in the
   canonical values of :mod:`..mysql.normalise`.
5. ``changes``: what a read yields (transactions of row changes). ``stop_rules``: when a read ends
   (caught up, a GTID set, a commit time, within a set), decided on GTID sets and commit timestamps.
6. ``errors``: one class per reason a read stops, each a :class:`..errors.BinlogError` with what to do.

Invariant: a read from position P yields exactly the transactions not in P, each once, whole, in
commit order, and its position after each is ``P | {every GTID consumed}``; any event it cannot
represent exactly stops it with a typed error instead of being skipped, or, when the caller asks,
marks its transaction (DDL: ``SchemaChange``; a statement-logged data change: ``StatementChange``)
for the applier to decide. Guarded by
``test_reading_in_random_segments_equals_one_full_read``,
``test_filtered_transactions_still_advance_the_position``,
``tests/integration/test_binlog_hazards.py`` and ``test_binlog_failures.py``.

Imports: values, runtime, mysql, errors; never lake, snapshot or apply.
"""
