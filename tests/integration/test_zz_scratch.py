import traceback
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import UntilCaughtUp
from tests.integration.test_binlog_reader import gtid_executed, table_name
from tests.support.mysql import execute

def test_scratch(mysql_database, tmp_path):
    f = tmp_path / "rows.tsv"
    f.write_text("7\t7\n8\t8\n")
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "CREATE TABLE o (id BIGINT UNSIGNED PRIMARY KEY)")
    start = gtid_executed(mysql_database)
    execute(mysql_database, "SET SESSION binlog_format = 'STATEMENT'", "BEGIN", "INSERT INTO t VALUES (1, 1)", "UPDATE t SET v = 2", "COMMIT")
    execute(mysql_database, "SET SESSION binlog_format = 'MIXED'", "BEGIN", "INSERT INTO t VALUES (2, 1)", "INSERT INTO o VALUES (1)", "INSERT INTO o VALUES (UUID_SHORT())", "COMMIT")
    execute(mysql_database, "SET SESSION binlog_format = 'STATEMENT'", f"LOAD DATA INFILE '{f}' INTO TABLE t")
    execute(mysql_database, "INSERT INTO t VALUES (3, 1)")
    for mark in (True, False):
        reader = BinlogReader(mysql_database, tables=[table_name(mysql_database, "t"), table_name(mysql_database, "o")], heartbeat_s=0.2, mark_statement_changes=mark)
        try:
            for tx in reader.read(start, UntilCaughtUp()):
                print("TX", tx.gtid, [(c.table, c.op, c.after) for c in tx.changes], tx.statement_changes)
        except Exception as e:
            print("ERR", type(e), e)
