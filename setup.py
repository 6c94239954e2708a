"""The package's optional compiled parts; every other setting is in pyproject.toml.

Each extension is ``optional``: without a C compiler (or on a platform that cannot build it) the
install still succeeds and the package uses its pure-Python readers, which give the same values:

- ``_json_text`` turns MySQL binary JSON into canonical JSON text (``decoding/json_text.py``);
- ``_row_values`` reads DATETIME, TIMESTAMP and packed DECIMAL values (``decoding/native.py``).
"""

from setuptools import Extension, setup

_PACKAGE = "airflow_mysql_cdc.engine.binlog.decoding"

setup(
    ext_modules=[
        Extension(f"{_PACKAGE}.{name}", [f"{_PACKAGE.replace('.', '/')}/{name}.c"], optional=True)
        for name in ("_json_text", "_row_values")
    ]
)
