"""Split a known binlog segment into disjoint GTID ranges that separate readers can fetch at once.

Invariant: for a segment ``[start, end)`` (``start ⊆ end``, both GTID sets), the ranges returned by
:func:`split_segment` are pairwise disjoint, their union is exactly ``end - start``, and every GTID
of range ``i`` has a smaller transaction number than every GTID of range ``i + 1``. A reader of
range ``i`` starts from ``end - range_i`` ("everything except my range"): a GTID auto-position dump
sends exactly the transactions *not* in the start set, so that reader receives its range and
nothing else of the segment.

Why ranges are cut only inside one server UUID: the order the sink needs is the binlog order. For
transactions numbered automatically by one server, numbers are handed out when the transaction is
flushed to the binlog, so number order *is* binlog order and concatenating the ranges in number
order restores it. Transactions of two UUIDs (a former replica, a failover) interleave in a way the
numbers do not tell, so a segment spanning several UUIDs is not split: it is one range, read by one
reader in binlog order (``test_segment_of_two_server_uuids_is_not_split``). The assumption "number
order is binlog order" breaks only for GTIDs assigned by hand out of order (``SET gtid_next``); each
reader also asks for the first GTID of the next range, which makes every such disorder visible to
some reader, which then reports it instead of the ranges being reordered silently
(:meth:`RangePlan.reader_start`, :mod:`~airflow_mysql_cdc.engine.apply.range_reader`).
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_mysql_cdc.engine.values.gtid import GtidSet, Interval


@dataclass(frozen=True)
class RangePlan:
    """The ranges of a segment and, when fewer than asked, why."""

    start: GtidSet
    end: GtidSet
    ranges: tuple[GtidSet, ...]
    reason_not_split: str | None = None

    def reader_start(self, index: int) -> GtidSet:
        """Where reader ``index`` starts: the segment's end except its range and the next range's first GTID.

        The one GTID of overlap makes disorder detectable: if numbers were not binlog order, two
        GTIDs adjacent in number order would be inverted in the binlog (were every adjacent pair in
        order, all would be). Inside a range the reader sees numbers go down; across a boundary it
        sees the next range's first GTID arrive before its own range is complete. Either way it
        reports a violation (``test_gtids_numbered_out_of_binlog_order_fall_back_to_the_single_reader``).
        """
        start = self.end - self.ranges[index]
        if index + 1 < len(self.ranges):
            start = start - GtidSet.of([next(iter(self.ranges[index + 1]))])
        return start


def split_segment(start: GtidSet, end: GtidSet, parts: int) -> RangePlan:
    """At most ``parts`` ranges of ``end - start`` with (nearly) equal transaction counts."""
    if parts < 1:
        raise ValueError(f"parts must be at least 1, got {parts}")
    if not start.issubset(end):
        raise ValueError(
            f"the segment end {end} does not contain its start {start}: the end must be a later "
            "@@gtid_executed (or a target taken from it) of the same server"
        )
    segment = end - start
    if segment.is_empty():
        return RangePlan(start, end, ())
    sources = segment.intervals_by_source
    if len(sources) > 1:
        return RangePlan(
            start, end, (segment,), "the segment holds transactions of more than one server UUID"
        )
    ((source, intervals),) = sources.items()
    if source[1]:
        return RangePlan(start, end, (segment,), "the segment holds tagged GTIDs")
    pieces = _split_intervals(intervals, min(parts, segment.count()))
    return RangePlan(start, end, tuple(GtidSet({source: piece}) for piece in pieces))


def _split_intervals(intervals: tuple[Interval, ...], parts: int) -> list[list[Interval]]:
    """Cut ascending intervals into ``parts`` consecutive pieces whose sizes differ by at most one."""
    total = sum(last - first + 1 for first, last in intervals)
    sizes = [total // parts + (1 if index < total % parts else 0) for index in range(parts)]
    pieces: list[list[Interval]] = []
    queue = list(intervals)
    for size in sizes:
        piece: list[Interval] = []
        while size:
            first, last = queue[0]
            taken = min(size, last - first + 1)
            piece.append((first, first + taken - 1))
            size -= taken
            if first + taken > last:
                queue.pop(0)
            else:
                queue[0] = (first + taken, last)
        pieces.append(piece)
    return pieces
