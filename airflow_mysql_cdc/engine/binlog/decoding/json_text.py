"""One binlog JSON column payload (MySQL binary JSON) as canonical JSON text, in C when it can be.

Invariant: ``json_text(payload)`` is exactly ``canonical_json(binary_json_value(payload))`` (the
pure-Python parser of :mod:`.binary_json` and the printer of
:mod:`~airflow_mysql_cdc.engine.mysql.normalise`) for every payload, and raises what that pair
raises. Why: that pair was about 38% of a reader's time (docs/benchmarks.md); the compiled
``_json_text`` goes from the bytes to the text in one pass without building Python values.

The extension is optional: a package installed without a compiler, the engine archive Spark
executors import from a zip (``.py`` files only), and ``AIRFLOW_MYSQL_CDC_PURE_PYTHON=1`` (tests,
debugging) all use the Python pair. The C code prints every document MySQL writes, OPAQUE values
(DECIMAL, dates and times, binary) included, and answers None for the rest: malformed or truncated
payloads, strings that are not UTF-8, duplicate keys, nesting deeper than 128, DECIMAL and temporal
values MySQL never writes; the Python pair decides those payloads (its text or its error).
Guarded by ``tests/unit/test_json_text.py``.
"""

from __future__ import annotations

from collections.abc import Callable

from airflow_mysql_cdc.engine.binlog.decoding.binary_json import binary_json_value
from airflow_mysql_cdc.engine.binlog.decoding.native import pure_python_requested
from airflow_mysql_cdc.engine.mysql.normalise import canonical_json


def python_json_text(payload: bytes) -> str:
    """The reference: the Python parser, then the canonical printer."""
    return canonical_json(binary_json_value(payload))


def _extension() -> Callable[[bytes], str | None] | None:
    """The extension's function, or None when it is not built or not importable (a zip, no compiler)."""
    try:
        from airflow_mysql_cdc.engine.binlog.decoding import _json_text
    except ImportError:
        return None
    return _json_text.json_text


compiled_json_text = _extension()
"""The compiled function itself (it answers None for "decide with the Python pair"), if built."""


def _choose() -> Callable[[bytes], str]:
    compiled = None if pure_python_requested() else compiled_json_text
    if compiled is None:
        return python_json_text

    def json_text(payload: bytes) -> str:
        text = compiled(payload)
        return python_json_text(payload) if text is None else text

    return json_text


json_text = _choose()
"""Canonical JSON text of one payload; see the module docstring for the invariant."""
