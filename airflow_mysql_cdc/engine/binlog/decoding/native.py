"""The compiled readers of row values, when they are built and allowed; None otherwise.

Invariant: every compiled reader returns exactly what its pure-Python twin returns for the same bytes
(``tests/unit/test_compiled_row_values.py`` compares them over random and edge values), so which one
runs changes speed only. The compiled module is optional: a package installed without a C compiler,
or shipped to Spark executors as a zip of sources, has none, and ``AIRFLOW_MYSQL_CDC_PURE_PYTHON=1``
turns it off (to compare, or to rule it out when debugging).
"""

from __future__ import annotations

import os
from types import ModuleType

from airflow_mysql_cdc.engine.binlog.decoding.packed_decimal import read_decimal

PURE_PYTHON_VARIABLE = "AIRFLOW_MYSQL_CDC_PURE_PYTHON"


def pure_python_requested() -> bool:
    """``AIRFLOW_MYSQL_CDC_PURE_PYTHON`` is set (to anything but 0): every compiled reader is off."""
    return os.environ.get(PURE_PYTHON_VARIABLE, "").strip() not in ("", "0")


def _row_values() -> ModuleType | None:
    if pure_python_requested():
        return None
    try:
        from airflow_mysql_cdc.engine.binlog.decoding import _row_values as module
    except ImportError:
        return None
    module.use_decimal_fallback(read_decimal)
    return module


ROW_VALUES: ModuleType | None = _row_values()
"""``datetime2(data, at, fsp)``, ``timestamp2(data, at, fsp)``, ``decimal(data, at, precision, scale)``."""
