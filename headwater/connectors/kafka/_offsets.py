"""Offsets as state: which offsets of each topic partition are committed, and the ranges
a sync still reads.

State (a JSON object; one stream is one topic)::

    {"state_type": "kafka-offsets",
     "offsets": {"0": 1200, "1": 800},        # partition -> next offset to read
     "done": {"1": [[1500, 2000]]}}           # committed ranges above it (rare)

Everything below a partition's ``next`` is settled: committed to the destination,
or gone from the log before it could be read (a warning said so).  Ranges of one
sync commit in any order, so a range that lands before the ranges below it is
kept in ``done`` until they land too; the next plan reads exactly the gaps.

Each planned partition carries ``base``: where its topic partition's history began
for that plan (the state's ``next``, the log start when offsets below it are gone,
the partition's end for ``start: latest``).  Closing a partition raises ``next`` to
at least ``base``, so a range the log lost is passed over once, not warned about on
every sync.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from headwater.connectors._ranges import merge_range
from headwater.errors import StateError
from headwater.sdk import Cursor, Partition

__all__ = ["STATE_TYPE", "OffsetCursor", "Span", "cut", "partition_id"]

STATE_TYPE = "kafka-offsets"


@dataclass(frozen=True)
class Span:
    """One topic partition as a plan sees it: settled below ``base``; ``[start, end)``
    to read (``start`` > ``base`` when the log no longer holds the offsets between)."""

    partition: int
    base: int
    start: int
    end: int


def cut(span: Span, done: Sequence[Sequence[int]], size: int) -> list[tuple[int, int]]:
    """The offsets of ``[span.start, span.end)`` not in ``done``, in ranges of at most
    ``size`` offsets (so at most ``size`` records: aborted records, transaction markers
    and compacted records leave gaps, never extra records)."""
    if size < 1:
        raise ValueError(f"a range holds at least one offset, got {size}")
    pieces: list[tuple[int, int]] = []
    position = span.start
    for low, high in [*sorted((int(a), int(b)) for a, b in done), (span.end, span.end)]:
        stop = min(low, span.end)
        while position < stop:
            pieces.append((position, min(position + size, stop)))
            position = pieces[-1][1]
        position = max(position, high)
    return pieces


def partition_id(topic: str, partition: int, low: int, high: int) -> str:
    return f"{topic}:{partition}:{low}-{high}"


class OffsetCursor(Cursor):
    """Turns closed offset ranges into the state of the module docstring.

    Not picklable (it holds a lock): it lives on the driver, where commit threads close
    partitions while the engine reads :meth:`state`.
    """

    def __init__(self, state: Mapping[str, Any] | None) -> None:
        self._lock = threading.Lock()
        self._next: dict[int, int] = {}
        self._done: dict[int, list[list[int]]] = {}
        if state:
            self._load(state)

    def _load(self, state: Mapping[str, Any]) -> None:
        if state.get("state_type") != STATE_TYPE:
            raise StateError(f"Kafka state must have state_type {STATE_TYPE!r}, got "
                             f"{state.get('state_type')!r}; reset the stream to start over")
        try:
            self._next = {int(p): int(o) for p, o in (state.get("offsets") or {}).items()}
            self._done = {int(p): [[int(a), int(b)] for a, b in ranges]
                          for p, ranges in (state.get("done") or {}).items() if ranges}
        except (AttributeError, TypeError, ValueError) as exc:
            raise StateError("Kafka state needs 'offsets' (partition -> next offset) and "
                             f"'done' (partition -> [[from, upto], ...]), got {dict(state)!r}"
                             ) from exc

    def next_offset(self, partition: int) -> int | None:
        """The next offset to read of ``partition`` (None: never read)."""
        with self._lock:
            return self._next.get(partition)

    def done(self, partition: int) -> list[list[int]]:
        """Committed ranges above ``partition``'s next offset."""
        with self._lock:
            return [list(r) for r in self._done.get(partition, [])]

    @property
    def has_offsets(self) -> bool:
        with self._lock:
            return bool(self._next)

    def close_partition(self, partition: Partition) -> None:
        params = partition.params
        try:
            number, base = int(params["partition"]), int(params["base"])
            low, high = int(params["from"]), int(params["upto"])
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"partition is not a Kafka offset range: {exc}",
                             stream=partition.stream, partition=partition.id) from exc
        with self._lock:
            position = max(self._next.get(number, base), base)
            ranges = self._done.get(number, [])
            if high > low:
                ranges = merge_range(ranges, low, high)
            while ranges and ranges[0][0] <= position:
                position = max(position, ranges.pop(0)[1])
            self._next[number] = position
            if ranges:
                self._done[number] = ranges
            else:
                self._done.pop(number, None)

    def state(self) -> dict[str, Any]:
        with self._lock:
            state: dict[str, Any] = {
                "state_type": STATE_TYPE,
                "offsets": {str(p): o for p, o in sorted(self._next.items())}}
            if self._done:
                state["done"] = {str(p): [list(r) for r in ranges]
                                 for p, ranges in sorted(self._done.items())}
            return state
