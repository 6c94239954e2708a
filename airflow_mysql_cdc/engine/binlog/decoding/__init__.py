"""Row images to canonical values (the values a SELECT of the same row gives, see :mod:`...mysql.normalise`).

- ``rows``: rows events to :class:`..changes.RowChange`, refusing images that are not whole (missing
  column names, a MINIMAL image, a partial JSON update).
- ``compiled``: a per-schema reader of row images that returns exactly what the library plus our
  normalisers return, several times faster; the library's path stays for what it cannot compile.
- ``binary_json``, ``packed_decimal``: MySQL's binary JSON and packed DECIMAL formats.
- ``native``: the compiled C readers of DATETIME, TIMESTAMP and DECIMAL values (``_row_values.c``)
  when built, giving what the Python readers give; None without a compiler or with
  ``AIRFLOW_MYSQL_CDC_PURE_PYTHON=1``.
- ``json_text``: a JSON column's payload as canonical text, by the optional C extension ``_json_text``
  where it is built (the same text, ``tests/unit/test_json_text.py``), else by ``binary_json``.

Guarded by ``test_the_compiled_decoder_gives_the_library_values_for_every_type`` and the
SELECT/binlog parity test (``tests/integration/test_mysql_types_parity.py``).
"""
