"""What a verification leaves for the next one: the chunks it must check again first.

Invariant: a chunk in which a verification proved a difference it did not repair, or left keys out
(their rows at the position unknown, :mod:`.changed_keys` point 3), is checked again by the next
verification of the table, before anything else, whatever the sample's cursor says; it leaves the
list only when a verification compared it with nothing left out and found it equal (or repaired
it). So following the failure message ("set verify_repair: true and clear this task") repairs
exactly what the failed try proved: the cleared try re-checks those chunks, at the same position
(nothing was applied in between) or a later one, and repairs what still differs. Before this list,
the cleared try of a ``sample`` verification went on with the next chunks, went green, and the row
stayed wrong for three more runs (issue 33); guarded by
``test_a_failed_sample_verify_cleared_with_repair_repairs_the_keys_it_proved``.

Where it lives: in the ``_cdc/verify`` row of the table (:mod:`.verify_log`), read as data, never
in commit history, which maintenance prunes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from airflow_mysql_cdc.engine.snapshot.chunks import Chunk
from airflow_mysql_cdc.engine.snapshot.key_codec import decode_key, encode_key
from airflow_mysql_cdc.engine.values.json_values import JsonObject

Why = Literal["differed", "left_out"]


@dataclass(frozen=True)
class PendingChunk:
    """A key range (``lower`` exclusive, ``upper`` inclusive, None: open) to check again, and why."""

    lower: tuple[Any, ...] | None
    upper: tuple[Any, ...] | None
    why: Why
    position: str
    """The position at which it differed or had keys left out."""

    def describe(self) -> str:
        what = "differed" if self.why == "differed" else "had keys left out"
        return f"({_bound(self.lower)}, {_bound(self.upper)}] {what} at {self.position}"

    def to_json(self) -> JsonObject:
        return {
            "lower": encode_key(self.lower),
            "upper": encode_key(self.upper),
            "why": self.why,
            "position": self.position,
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> PendingChunk:
        why = data["why"]
        if why not in ("differed", "left_out"):
            raise ValueError(f"a pending chunk's why must be differed or left_out, not {why!r}")
        return cls(decode_key(data.get("lower")), decode_key(data.get("upper")), why, str(data["position"]))


def _bound(key: tuple[Any, ...] | None) -> str:
    return "-" if key is None else ", ".join(map(str, key))


def as_chunks(pending: Sequence[PendingChunk], first_index: int) -> list[Chunk]:
    """The pending ranges as chunks numbered from ``first_index`` (after this run's planned ones)."""
    return [Chunk(first_index + number, item.lower, item.upper) for number, item in enumerate(pending)]


def still_pending(checked: Iterable[tuple[Chunk, bool, int]], position: str) -> tuple[PendingChunk, ...]:
    """What to check again after this verification: each ``(chunk, differs, left_out)`` checked
    that still differs (not repaired) or left keys out, once per range."""
    pending: dict[tuple[Any, Any], PendingChunk] = {}
    for chunk, differs, left_out in checked:
        if differs or left_out:
            why: Why = "differed" if differs else "left_out"
            key = (repr(chunk.lower), repr(chunk.upper))
            if key not in pending or why == "differed":
                pending[key] = PendingChunk(chunk.lower, chunk.upper, why, position)
    return tuple(pending.values())
