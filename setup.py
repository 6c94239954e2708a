"""The optional C extension; everything else about the package is in pyproject.toml.

``_json_text`` turns MySQL binary JSON into canonical JSON text (the reader's largest cost). It is
optional: without a compiler the build goes on without it and ``decoding/json_text.py`` uses the
pure-Python parser and printer, which give the same text.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "airflow_mysql_cdc.engine.binlog.decoding._json_text",
            ["airflow_mysql_cdc/engine/binlog/decoding/_json_text.c"],
            optional=True,
        )
    ]
)
