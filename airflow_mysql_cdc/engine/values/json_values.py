"""Names for values whose shape is JSON by contract, so that a signature says which edge it stands on.

Invariant: a :data:`JsonObject` is a value on its way into or out of JSON (an XCom value, an
application's result file, a trigger event, a record's or a table property's JSON form, a report's
``to_dict``); code between two edges passes typed values (``GtidSet``, ``ApplyResult``,
``SegmentPlan``, ``VerifyReport``, ...), never one of these. A :data:`RowValues` is one row image of
the source, column name to canonical value, the one untyped dict the data path carries (its
columns are only known at run time).
"""

from __future__ import annotations

from typing import Any, TypeAlias

JsonObject: TypeAlias = dict[str, Any]
"""A JSON object at an edge: XCom, a result file, an event, a record's or a property's JSON form."""

RowValues: TypeAlias = dict[str, Any]
"""One row image: column name to its canonical value (types known only from the table's columns)."""
