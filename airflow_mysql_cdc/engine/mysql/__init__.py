"""The source: what a MySQL table is, how its values read, and whether the server can feed CDC.

Reading order:
1. ``schema``: :class:`TableRef`, the ONE column model (:class:`Column`, read only by
   :func:`read_columns`, with the one ENUM/SET member parser) and the row key a table is merged and
   chunked by. Guarded by
   ``test_enum_and_set_members_with_quotes_commas_and_capitals_are_one_model_on_every_path``.
2. ``types``: :class:`ColumnType`, one type mapping to Arrow, built from the column model or from the
   binlog's table map; both give the same type (``assert binlog_columns == select_columns``).
3. ``normalise``: the canonical value of every type, the same from a SELECT and from the binlog;
   the select list that reads FLOAT/DOUBLE exactly. Guarded by
   ``test_every_type_maps_to_identical_arrow_values_from_select_and_binlog`` and
   ``test_snapshot_comparison_and_binlog_read_floats_doubles_decimals_bit_for_bit``.
4. ``select_arrow``: text protocol rows straight to Arrow, without per-value Python objects.
4b. ``definition``: :class:`TableDefinition`, a table's columns (the one :class:`Column` model) and
   row key as a snapshot records them; compared only through the lake's one shape rule
   (:func:`~airflow_mysql_cdc.engine.lake.table_shape.compatibility`). Guarded by
   ``test_a_recorded_definition_of_every_type_reads_back_as_the_same_columns``.
5. ``ddl/``: what a DDL statement from the binlog does (``parse_ddl``), certain or ``Unparsed`` /
   ``OtherChange`` (the engine then re-snapshots); its own map gives the reading order: lexer,
   statements, ALTER clauses, column definitions, the value an added column gives existing rows.
   Guarded by ``tests/unit/test_mysql_ddl*.py`` and, on MySQL,
   ``test_added_columns_have_the_type_and_existing_row_values_the_parser_reads``.
6. ``server_state``: ``gtid_executed``, ``gtid_purged``, the server's identity; ``grants``: the account.
7. ``prerequisites/``: can this server feed a pipeline (its own map).
7b. ``binlog_retention``: how long the server keeps binlogs, per platform (MySQL, RDS, Aurora, Cloud
   SQL); ``binlog_files``: the binlog file a checkpoint needs and when it was last written, for the
   headroom (:mod:`..values.headroom`). Guarded by ``tests/unit/test_binlog_retention_platforms.py``
   and ``test_headroom_is_the_needed_files_last_write_plus_retention_and_the_server_purges_it_then``.
8. ``table_standing``: the one rule for a configured table that is gone (dropped or renamed away
   after it joined) or waits for a snapshot after leaving at a DDL; the prerequisites, the segment
   plan and admission ask it. Guarded by ``tests/unit/test_table_standing.py``.

Imports: values, runtime, errors; never binlog, lake, snapshot or apply.
"""
