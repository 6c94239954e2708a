"""The package's optional compiled parts; every other setting is in pyproject.toml.

Each extension is ``optional``: without a C compiler (or on a platform that cannot build it) the
install still succeeds and the package uses its pure-Python readers, which give the same values
(:mod:`airflow_mysql_cdc.engine.binlog.decoding.native`).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "airflow_mysql_cdc.engine.binlog.decoding._row_values",
            sources=["airflow_mysql_cdc/engine/binlog/decoding/_row_values.c"],
            optional=True,
        )
    ]
)
