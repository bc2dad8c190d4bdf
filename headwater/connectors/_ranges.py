"""Merging half-open integer ranges: what a cursor that keeps committed parts does.

The object storage cursor keeps the committed byte ranges (or row groups) of an
object read in several partitions; the Kafka cursor the committed offset ranges
of a topic partition.  Both add one range at a time, as partitions close in any
order, and keep the list sorted with touching ranges joined.
"""

from __future__ import annotations

__all__ = ["merge_range"]


def merge_range(ranges: list[list[int]], low: int, high: int) -> list[list[int]]:
    """``ranges`` (sorted, disjoint) with ``[low, high)`` added: sorted, and every two
    ranges that overlap or touch joined into one."""
    merged: list[list[int]] = []
    for a, b in sorted([*ranges, [low, high]]):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged
