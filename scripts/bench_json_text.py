#!/usr/bin/env python3
"""µs per payload of a JSON column's canonical text: the compiled ``_json_text`` vs the Python pair.

Two documents, encoded as MySQL's binary JSON by the tests' encoder: a 10-key object (strings,
integers, a double, a literal, a nested array and object), and the benchmark table's document
(``JSON_OBJECT('k', i, 'tags', JSON_ARRAY('a', i % 7), 'price', i / 100)``: a DECIMAL inside).

    .venv/bin/python scripts/bench_json_text.py
"""

from __future__ import annotations

import sys
import timeit
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from airflow_mysql_cdc.engine.binlog.decoding.json_text import (  # noqa: E402
    compiled_json_text,
    json_text,
    python_json_text,
)
from tests.unit.binary_json_encoding import encode, packed_decimal  # noqa: E402

DOCUMENTS = {
    "10-key object": {
        "id": 123456,
        "name": "Widget Pro 3000",
        "sku": "WP-3000-BLK",
        "price": 19.99,
        "stock": 42,
        "active": True,
        "tags": ["tools", "hardware", "sale", 7],
        "dims": {"w": 10, "h": 20, "unit": "cm"},
        "description": "A sturdy widget, now with ünïcödé",
        "updated_by": -17,
    },
    "benchmark table's document": {
        "k": 12345,
        "tags": ["a", 4],
        "price": packed_decimal(Decimal("123.45"), 9, 4),
    },
}


def per_call_us(function, payload: bytes) -> float:
    """The best of five runs, µs per call."""
    timer = timeit.Timer(lambda: function(payload))
    number, _ = timer.autorange()
    return min(timer.repeat(5, number)) / number * 1e6


def main() -> None:
    if compiled_json_text is None:
        sys.exit("the C extension is not built (pip install -e . with a compiler builds it)")
    for name, document in DOCUMENTS.items():
        payload = encode(document)
        assert compiled_json_text(payload) == python_json_text(payload)
        python, compiled = per_call_us(python_json_text, payload), per_call_us(compiled_json_text, payload)
        chosen = per_call_us(json_text, payload)  # what the reader calls
        speedup = python / compiled
        print(f"{name} ({len(payload)} bytes): Python {python:.2f} µs, C {compiled:.2f} µs ({speedup:.1f}x),")
        print(f"    json_text (the C function behind the module's dispatch) {chosen:.2f} µs")


if __name__ == "__main__":
    main()
