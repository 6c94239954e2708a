"""GTID sets: the unit of progress for every watermark, checkpoint and stop rule.

Invariant: a ``GtidSet`` is a value. Two sets holding the same transactions are equal, hash
equally and print the same canonical string (UUIDs sorted, then tags sorted within a UUID, the
untagged intervals first; intervals merged, ascending, adjacent ones joined). Checkpoints compare
and persist that string, so "the same progress" is always the same text.

Why not ``pymysqlreplication.gtid.GtidSet``: it has no set difference (we need ``H - L`` for
snapshot windows and ``purged - checkpoint`` for the resumability sensor), no intersection, and
cannot parse MySQL 8.3+ tagged GTIDs (``uuid:tag:1-5``). We keep the library only as the consumer
of :meth:`GtidSet.to_replication_position`, the string it parses to start a GTID binlog dump; that
conversion refuses tagged sets, because the library cannot encode them.

Grammar accepted (everything MySQL prints in ``@@gtid_executed``, ``@@gtid_purged`` and
``SHOW BINARY LOG STATUS``)::

    gtid_set  := "" | uuid_set ("," uuid_set)*        whitespace and newlines around "," ignored
    uuid_set  := uuid (":" (tag | interval))+         a tag applies to the intervals after it
    interval  := n | n "-" m                           1 <= n <= m < 2**63
    tag       := [a-z_][a-z0-9_]{0,31}                 case-insensitive, stored lower-case
    uuid      := 8-4-4-4-12 hex digits                  case-insensitive, stored lower-case

All of it is ASCII: digits, tags and UUIDs are checked against ASCII patterns, never Python's
Unicode-aware ``int``/``str.lower``/``uuid.UUID`` alone (see ``_UUID_PATTERN``).
"""

from __future__ import annotations

import re
import uuid as uuid_module
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property

from airflow_mysql_cdc.engine.errors import CdcError

MAX_TRANSACTION_NUMBER = 2**63 - 1
# ASCII only, matched whole: Python's ``\d``, ``str.lower`` and ``uuid.UUID`` are all more lenient
# than MySQL (Arabic-Indic digits, the Kelvin sign lower-casing to "k", "_" or "+" inside a UUID
# silently turning it into a different server's UUID). Guarded by
# ``test_parse_rejects_text_python_accepts_but_mysql_does_not`` in tests/unit/test_gtid_set.py.
_UUID_PATTERN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.ASCII | re.I)
_TAG_PATTERN = re.compile(r"[a-z_][a-z0-9_]{0,31}", re.ASCII | re.I)
_INTERVAL_PATTERN = re.compile(r"(\d+)(?:-(\d+))?", re.ASCII)

Interval = tuple[int, int]
"""Closed range of transaction numbers, ``(first, last)`` with ``first <= last``."""

Intervals = tuple[Interval, ...]
"""Merged, ascending, non-adjacent intervals of one ``(uuid, tag)``."""

SourceKey = tuple[str, str]
"""``(server uuid, tag)``: the tag is ``""`` for untagged GTIDs."""


class MalformedGtidSetError(CdcError, ValueError):
    """A GTID set string that MySQL would not accept; the message names the bad token."""

    def __init__(self, text: str, token: str, reason: str) -> None:
        self.text = text
        self.token = token
        super().__init__(f"malformed GTID set: {reason}: {token!r} in {_shorten(text)!r}")


class TaggedGtidsUnsupportedError(CdcError, ValueError):
    """The set holds tagged GTIDs, which mysql-replication 1.0.17 cannot encode or parse."""


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass(frozen=True, order=True)
class Gtid:
    """One transaction identifier: ``uuid:number`` or ``uuid:tag:number``."""

    uuid: str
    number: int
    tag: str = ""

    def __post_init__(self) -> None:
        # A Gtid built directly (not parsed) must still land in the same canonical form, or
        # ``GtidSet.of([Gtid(UPPER_UUID, 1)])`` would print upper case and differ from the parsed set.
        # Guarded by ``test_gtid_built_directly_is_normalised_like_a_parsed_one``.
        text = f"{self.uuid}:{self.tag + ':' if self.tag else ''}{self.number}"
        object.__setattr__(self, "uuid", _normalise_uuid(self.uuid, text))
        if self.tag:
            object.__setattr__(self, "tag", _normalise_tag(self.tag, text))
        if isinstance(self.number, bool) or not isinstance(self.number, int):
            raise TypeError(f"Gtid.number must be an int, got {type(self.number).__name__}")
        if not 1 <= self.number <= MAX_TRANSACTION_NUMBER:
            raise MalformedGtidSetError(text, str(self.number), "transaction numbers are 1 to 2^63-1")

    @classmethod
    def parse(cls, text: str) -> Gtid:
        gtid_set = GtidSet.parse(text)
        if gtid_set.count() != 1:
            raise MalformedGtidSetError(text, text, "expected exactly one GTID")
        ((source, intervals),) = gtid_set.intervals_by_source.items()
        return cls(uuid=source[0], number=intervals[0][0], tag=source[1])

    def __str__(self) -> str:
        tag = f":{self.tag}" if self.tag else ""
        return f"{self.uuid}{tag}:{self.number}"


def _normalise_uuid(token: str, text: str) -> str:
    stripped = token.strip()
    if not _UUID_PATTERN.fullmatch(stripped):
        raise MalformedGtidSetError(text, token, "not a server UUID")
    return str(uuid_module.UUID(stripped))


def _normalise_tag(token: str, text: str) -> str:
    if not _TAG_PATTERN.fullmatch(token):
        raise MalformedGtidSetError(text, token, "neither an interval nor a valid tag")
    return token.lower()


def _parse_interval(token: str, text: str) -> Interval:
    match = _INTERVAL_PATTERN.fullmatch(token)
    if not match:
        raise MalformedGtidSetError(text, token, "not an interval (n or n-m)")
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    if first < 1:
        raise MalformedGtidSetError(text, token, "transaction numbers start at 1")
    if last < first:
        raise MalformedGtidSetError(text, token, "interval end is before its start")
    if last > MAX_TRANSACTION_NUMBER:
        raise MalformedGtidSetError(text, token, "transaction number exceeds 2^63-1")
    return first, last


def _merge(intervals: Iterable[Interval]) -> tuple[Interval, ...]:
    merged: list[Interval] = []
    for first, last in sorted(intervals):
        if merged and first <= merged[-1][1] + 1:
            if last > merged[-1][1]:
                merged[-1] = (merged[-1][0], last)
        else:
            merged.append((first, last))
    return tuple(merged)


def _intersect(left: tuple[Interval, ...], right: tuple[Interval, ...]) -> tuple[Interval, ...]:
    result: list[Interval] = []
    i = j = 0
    while i < len(left) and j < len(right):
        first = max(left[i][0], right[j][0])
        last = min(left[i][1], right[j][1])
        if first <= last:
            result.append((first, last))
        if left[i][1] < right[j][1]:
            i += 1
        else:
            j += 1
    return tuple(result)


def _subtract(left: tuple[Interval, ...], right: tuple[Interval, ...]) -> tuple[Interval, ...]:
    result: list[Interval] = []
    j = 0
    for first, last in left:
        cursor = first
        while j < len(right) and right[j][1] < cursor:
            j += 1
        k = j
        while k < len(right) and right[k][0] <= last:
            if right[k][0] > cursor:
                result.append((cursor, right[k][0] - 1))
            cursor = max(cursor, right[k][1] + 1)
            k += 1
        if cursor <= last:
            result.append((cursor, last))
    return tuple(result)


class GtidSet:
    """An immutable set of GTIDs, kept as merged intervals per ``(uuid, tag)``."""

    def __init__(self, intervals_by_source: Mapping[SourceKey, Iterable[Interval]] | None = None) -> None:
        normalised: dict[SourceKey, tuple[Interval, ...]] = {}
        for source, intervals in (intervals_by_source or {}).items():
            merged = _merge(intervals)
            if merged:
                normalised[source] = merged
        self._intervals: dict[SourceKey, tuple[Interval, ...]] = dict(sorted(normalised.items()))

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str | None) -> GtidSet:
        """Parse any form MySQL prints; ``None`` and ``""`` are the empty set."""
        if text is None:
            return cls()
        if not isinstance(text, str):
            raise TypeError(f"GtidSet.parse expects a string, got {type(text).__name__}")
        collected: dict[SourceKey, list[Interval]] = {}
        stripped = text.strip()
        if not stripped:
            return cls()
        for uuid_set in stripped.split(","):
            uuid_set = uuid_set.strip()
            if not uuid_set:
                raise MalformedGtidSetError(text, uuid_set, "empty element between commas")
            parts = [part.strip() for part in uuid_set.split(":")]
            server_uuid = _normalise_uuid(parts[0], text)
            if len(parts) < 2:
                raise MalformedGtidSetError(text, uuid_set, "a UUID needs at least one interval")
            tag = ""
            intervals_since_tag = 0
            for token in parts[1:]:
                if token[:1].isdigit():
                    collected.setdefault((server_uuid, tag), []).append(_parse_interval(token, text))
                    intervals_since_tag += 1
                    continue
                lowered = _normalise_tag(token, text)
                if tag and intervals_since_tag == 0:
                    raise MalformedGtidSetError(text, token, f"tag {tag!r} has no interval")
                tag = lowered
                intervals_since_tag = 0
            if intervals_since_tag == 0:
                raise MalformedGtidSetError(text, uuid_set, "the last tag has no interval")
        return cls(collected)

    @classmethod
    def of(cls, gtids: Iterable[Gtid | str]) -> GtidSet:
        """The set of the given single GTIDs."""
        collected: dict[SourceKey, list[Interval]] = {}
        for gtid in gtids:
            if isinstance(gtid, str):
                gtid = Gtid.parse(gtid)
            collected.setdefault((gtid.uuid, gtid.tag), []).append((gtid.number, gtid.number))
        return cls(collected)

    # --- views --------------------------------------------------------------------------------

    @property
    def intervals_by_source(self) -> Mapping[SourceKey, tuple[Interval, ...]]:
        return dict(self._intervals)

    @property
    def uuids(self) -> frozenset[str]:
        return frozenset(server_uuid for server_uuid, _ in self._intervals)

    @property
    def has_tags(self) -> bool:
        return any(tag for _, tag in self._intervals)

    def count(self) -> int:
        """Number of transactions; an int because sets can exceed ``sys.maxsize`` in principle."""
        return sum(last - first + 1 for intervals in self._intervals.values() for first, last in intervals)

    def is_empty(self) -> bool:
        return not self._intervals

    def __bool__(self) -> bool:
        return bool(self._intervals)

    def max_per_uuid(self) -> dict[str, int]:
        """Highest transaction number per server UUID (over all tags)."""
        highest: dict[str, int] = {}
        for (server_uuid, _), intervals in self._intervals.items():
            highest[server_uuid] = max(highest.get(server_uuid, 0), intervals[-1][1])
        return highest

    def __iter__(self) -> Iterator[Gtid]:
        """Every GTID in canonical order; only for small sets (tests, error messages)."""
        for (server_uuid, tag), intervals in self._intervals.items():
            for first, last in intervals:
                for number in range(first, last + 1):
                    yield Gtid(server_uuid, number, tag)

    # --- algebra ------------------------------------------------------------------------------

    def _combine(
        self, other: GtidSet, combine: Callable[[Intervals, Intervals], Iterable[Interval]]
    ) -> GtidSet:
        if not isinstance(other, GtidSet):
            # The named methods used to return NotImplemented here, which a caller passing a string
            # received as a (truthy) result. Guarded by
            # ``test_algebra_with_a_non_gtid_set_raises_type_error``.
            raise TypeError(f"expected a GtidSet, got {type(other).__name__}; parse it with GtidSet.parse")
        result: dict[SourceKey, Iterable[Interval]] = {}
        for source in self._intervals.keys() | other._intervals.keys():
            result[source] = combine(self._intervals.get(source, ()), other._intervals.get(source, ()))
        return GtidSet(result)

    def union(self, other: GtidSet) -> GtidSet:
        return self._combine(other, lambda left, right: left + right)

    def intersection(self, other: GtidSet) -> GtidSet:
        return self._combine(other, _intersect)

    def difference(self, other: GtidSet) -> GtidSet:
        return self._combine(other, _subtract)

    def __or__(self, other: object) -> GtidSet:
        return self.union(other) if isinstance(other, GtidSet) else NotImplemented

    def __and__(self, other: object) -> GtidSet:
        return self.intersection(other) if isinstance(other, GtidSet) else NotImplemented

    def __sub__(self, other: object) -> GtidSet:
        return self.difference(other) if isinstance(other, GtidSet) else NotImplemented

    def issubset(self, other: GtidSet) -> bool:
        return self.difference(other).is_empty()

    def issuperset(self, other: GtidSet) -> bool:
        if not isinstance(other, GtidSet):
            raise TypeError(f"expected a GtidSet, got {type(other).__name__}; parse it with GtidSet.parse")
        return other.issubset(self)

    def __le__(self, other: object) -> bool:
        return self.issubset(other) if isinstance(other, GtidSet) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self.issuperset(other) if isinstance(other, GtidSet) else NotImplemented

    def __contains__(self, gtid: Gtid | str) -> bool:
        if isinstance(gtid, str):
            gtid = Gtid.parse(gtid)
        intervals = self._intervals.get((gtid.uuid, gtid.tag), ())
        return any(first <= gtid.number <= last for first, last in intervals)

    def add(self, gtid: Gtid | str) -> GtidSet:
        """A new set with one more GTID (the set itself is immutable)."""
        return self.union(GtidSet.of([gtid]))

    # --- text ---------------------------------------------------------------------------------

    @cached_property
    def _canonical(self) -> str:
        by_uuid: dict[str, list[str]] = {}
        for (server_uuid, tag), intervals in self._intervals.items():
            pieces = by_uuid.setdefault(server_uuid, [server_uuid])
            if tag:
                pieces.append(tag)
            pieces.extend(f"{first}" if first == last else f"{first}-{last}" for first, last in intervals)
        return ",".join(":".join(pieces) for pieces in by_uuid.values())

    def __str__(self) -> str:
        return self._canonical

    def __repr__(self) -> str:
        return f"GtidSet({_shorten(self._canonical)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self._intervals == other._intervals

    def __hash__(self) -> int:
        return hash(self._canonical)

    def to_replication_position(self) -> str:
        """The ``auto_position`` string for ``BinLogStreamReader``.

        Beware: the library treats an empty string as "no GTID positioning" and starts at the
        server's current binlog file position, skipping history. Callers must not pass the empty
        set's result to it; the engine's reader guards this.
        """
        if self.has_tags:
            tagged = sorted({f"{u}:{t}" for u, t in self._intervals if t})
            raise TaggedGtidsUnsupportedError(
                "mysql-replication 1.0.17 cannot start a binlog dump from tagged GTIDs "
                f"({', '.join(tagged[:3])}); stop using tagged GTIDs (SET gtid_next with a tag) on this "
                "server, or run a reader that supports them"
            )
        return self._canonical
