"""The compiled row-image decoder gives exactly the values of the library path, for every type."""

from __future__ import annotations

import json
import logging
from itertools import count

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_mysql_cdc.engine.binlog.decoding import rows as row_decoding
from airflow_mysql_cdc.engine.binlog.reader import BinlogReader
from airflow_mysql_cdc.engine.binlog.stop_rules import UntilCaughtUp
from airflow_mysql_cdc.engine.mysql.normalise import canonical_json
from airflow_mysql_cdc.engine.values.endpoint import MySqlEndpoint
from tests.integration.test_binlog_reader import gtid_executed, row_images, table_name
from tests.integration.test_mysql_types_parity import write_every_type_rows
from tests.support.mysql import execute

pytestmark = pytest.mark.mysql


def read_both_ways(endpoint: MySqlEndpoint, start, table: str) -> tuple[list, list, BinlogReader]:
    """(compiled reader's row images, library's row images, the compiled reader)."""
    results = []
    readers = []
    for compiled in (True, False):
        reader = BinlogReader(
            endpoint, tables=[table_name(endpoint, table)], heartbeat_s=0.2, compiled_decoding=compiled
        )
        results.append(row_images(reader.read(start, UntilCaughtUp())))
        readers.append(reader)
    return results[0], results[1], readers[0]


def test_the_compiled_decoder_gives_the_library_values_for_every_type(mysql_database: MySqlEndpoint):
    start = write_every_type_rows(
        mysql_database,
        "INSERT INTO t (id, j, dec_small, dec_big) VALUES (8, JSON_OBJECT('p', CAST(12.50 AS DECIMAL(10,2)),"
        " 'when', CAST('2024-01-02 03:04:05.5' AS DATETIME(1))), -0.01, -0.5)",
        # updates of every column (the first row becomes the second's values and back), JSON unchanged
        "UPDATE t SET i8 = i8 + 1, dec_big = -dec_big, dtm6 = '2001-02-03 04:05:06.000007', vc = 'x'"
        " WHERE id = 1",
        "UPDATE t SET j = JSON_SET(j, '$.n', 4), s = '', e = 'c', b64 = 1 WHERE id IN (1, 2)",
        "DELETE FROM t WHERE id IN (2, 3)",
    )
    compiled, library, reader = read_both_ways(mysql_database, start, "t")

    # Row 7 is the JSON document null: "null" here, None (SQL NULL) from the library.
    assert [image[6]["j"] for image in compiled if image[4] == (7,)] == ["null"]
    assert [image[6]["j"] for image in library if image[4] == (7,)] == [None]
    compiled = [image for image in compiled if image[4] != (7,)]
    assert len(compiled) == 12
    assert compiled == [image for image in library if image[4] != (7,)]
    assert reader._decoder.library_events == 0  # every event went through the compiled reader


json_documents = st.recursive(
    st.booleans()
    | st.none()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=12), children, max_size=6)
    ),
    max_leaves=30,
)
table_numbers = count()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    documents=st.lists(json_documents.filter(lambda document: document is not None), min_size=1, max_size=25)
)
def test_binary_json_documents_decode_as_the_library_and_select_print_them(
    mysql_database: MySqlEndpoint, documents: list
):
    table = f"j{next(table_numbers)}"
    execute(mysql_database, f"CREATE TABLE {table} (id INT PRIMARY KEY, j JSON)")
    start = gtid_executed(mysql_database)
    with mysql_database.connect() as connection, connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} VALUES (%s, %s)", [(i, json.dumps(doc)) for i, doc in enumerate(documents)]
        )
        connection.commit()
        cursor.execute(f"SELECT j FROM {table} ORDER BY id")
        selected = [canonical_json(json.loads(text)) for (text,) in cursor.fetchall()]

    compiled, library, reader = read_both_ways(mysql_database, start, table)

    assert compiled == library
    assert [image[6]["j"] for image in compiled] == selected
    assert reader._decoder.library_events == 0


def test_large_json_documents_and_containers_decode_like_select(mysql_database: MySqlEndpoint):
    """Documents over 64 KiB use 4-byte offsets (large objects and arrays), with inlined INT32."""
    big = {
        f"k{i}": ["x" * 300, i, -i, 2**31 - 1, -(2**31), 70000, {"n": None, "t": True}] for i in range(300)
    }
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY, j LONGTEXT, d JSON)")
    start = gtid_executed(mysql_database)
    with mysql_database.connect() as connection, connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO t (id, d) VALUES (1, %s), (2, %s)", (json.dumps(big), json.dumps(list(big.values())))
        )
        connection.commit()
        cursor.execute("SELECT d FROM t ORDER BY id")
        selected = [canonical_json(json.loads(text)) for (text,) in cursor.fetchall()]

    compiled, library, reader = read_both_ways(mysql_database, start, "t")

    assert compiled == library
    assert [image[6]["d"] for image in compiled] == selected
    assert len(selected[0]) > 65536


def test_dates_times_and_binary_values_inside_json_print_as_select_prints_them(mysql_database: MySqlEndpoint):
    """The library crashed on these (datetime is not JSON serialisable; TIME over 23 h is no time)."""
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY, j JSON)")
    start = gtid_executed(mysql_database)
    execute(
        mysql_database,
        "INSERT INTO t VALUES (1, JSON_OBJECT('dt', CAST('2024-01-02 03:04:05.5' AS DATETIME(1)),"
        " 'd', CAST('2024-01-02' AS DATE), 'ts', TIMESTAMP'1999-12-31 23:59:59',"
        " 't', CAST('-838:59:58.25' AS TIME(2)), 'z', CAST('00:00:00' AS TIME), 'b', CAST(x'00ff' AS BINARY),"
        " 'p', CAST(-0.50 AS DECIMAL(4,2)))),"
        " (2, JSON_ARRAY(CAST('12:00:01' AS TIME), CAST('0001-01-01 00:00:00.000001' AS DATETIME(6))))",
    )
    with mysql_database.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT j FROM t ORDER BY id")
        selected = [canonical_json(json.loads(text)) for (text,) in cursor.fetchall()]
    reader = BinlogReader(mysql_database, tables=[table_name(mysql_database, "t")], heartbeat_s=0.2)

    compiled = row_images(reader.read(start, UntilCaughtUp()))

    assert [image[6]["j"] for image in compiled] == selected
    assert '"t":"-838:59:58.250000"' in selected[0] and '"b":"base64:type15:AP8="' in selected[0]


def test_a_json_null_document_is_the_text_null_not_sql_null(mysql_database: MySqlEndpoint):
    """The library reads the document ``null`` as None, which the lake stored as SQL NULL."""
    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY, j JSON)")
    start = gtid_executed(mysql_database)
    execute(mysql_database, "INSERT INTO t VALUES (1, 'null'), (2, NULL), (3, '[null]')")

    compiled, library, _ = read_both_ways(mysql_database, start, "t")

    assert [image[6]["j"] for image in compiled] == ["null", None, "[null]"]
    assert [image[6]["j"] for image in library] == [None, None, "[null]"]


def test_a_compiled_reader_that_disagrees_with_the_event_length_hands_the_event_to_the_library(
    mysql_database: MySqlEndpoint, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    compile_image_reader = row_decoding.compile_image_reader

    def overrunning(*args):
        read_image = compile_image_reader(*args)

        def read(data, position):
            values, key, end = read_image(data, position)
            return values, key, end + 100  # past the end of any rows event here

        return read

    execute(mysql_database, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))")
    start = gtid_executed(mysql_database)
    execute(mysql_database, "INSERT INTO t VALUES (1, 'a'), (2, 'b')", "UPDATE t SET v = 'c'")
    monkeypatch.setattr(row_decoding, "compile_image_reader", overrunning)

    with caplog.at_level(logging.WARNING, logger=row_decoding.__name__):
        compiled, library, reader = read_both_ways(mysql_database, start, "t")

    assert compiled == library and len(compiled) == 4
    assert reader._decoder.library_events == 2
    assert "the library decodes it" in caplog.text


def test_composite_keys_and_column_names_that_need_quoting_decode_like_the_library(
    mysql_database: MySqlEndpoint,
):
    """The generated reader's source holds column names as literals and the key as a tuple of them."""
    execute(
        mysql_database,
        "CREATE TABLE t (`a b` INT, `k'2\"\\\\` VARCHAR(10), `ü` INT, PRIMARY KEY (`k'2\"\\\\`, `a b`))",
    )
    start = gtid_executed(mysql_database)
    execute(
        mysql_database,
        "INSERT INTO t VALUES (1, 'x', 10), (2, 'y', NULL)",
        "UPDATE t SET `a b` = 3 WHERE `a b` = 1",
        "DELETE FROM t WHERE `ü` IS NULL",
    )

    compiled, library, reader = read_both_ways(mysql_database, start, "t")

    assert compiled == library and len(compiled) == 4
    assert [image[4] for image in compiled] == [(1, "x"), (2, "y"), (3, "x"), (2, "y")]  # table column order
    assert set(compiled[0][6]) == {"a b", "k'2\"\\\\", "ü"}  # backticks keep both backslashes
    assert reader._decoder.library_events == 0
