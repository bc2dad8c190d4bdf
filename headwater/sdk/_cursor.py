"""Cursors: turning closed partitions into stream state.

A cursor never looks at rows.  The engine closes a partition only after every
record it produced is committed to the destination, and only then does the
cursor's state move, so state always describes data that is durable.

The concurrent cursor keeps the merged list of completed ranges
rather than one high-water mark: partitions finish in any order, and a single
"max cursor value" would claim the unfinished windows below it as done.  With
ranges, the next sync reads exactly the gaps (:meth:`ConcurrentCursor.gaps`).

Example::

    cursor = ConcurrentCursor(cursor_field="updated_at",
                              converter=IsoDateTimeStateConverter(),
                              state=None, start="2024-01-01T00:00:00Z")
    cursor.close_partition(Partition("orders", "w2", {"start": "2024-01-02T00:00:00Z",
                                                      "end": "2024-01-03T00:00:00Z"}))
    cursor.gaps("2024-01-04T00:00:00Z")
    # [('2024-01-01T00:00:00Z', '2024-01-02T00:00:00Z'),
    #  ('2024-01-03T00:00:00Z', '2024-01-04T00:00:00Z')]
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from typing import Any

from headwater.errors import StateError
from headwater.sdk._partition import Partition
from headwater.sdk._state_converters import StateConverter

__all__ = ["FULL_REFRESH_COMPLETE_KEY", "ConcurrentCursor", "Cursor", "FinalStateCursor"]

#: Airbyte's marker that a full-refresh stream finished (``FinalStateCursor``).
FULL_REFRESH_COMPLETE_KEY = "__ab_full_refresh_sync_complete"

#: Keys the concurrent state form may carry; ``legacy`` is written by Airbyte and ignored.
_CONCURRENT_KEYS = frozenset({"state_type", "cursor_field", "slices", "legacy"})


class Cursor(ABC):
    """Turns closed partitions into the stream's state.

    State moves only when a partition closes, and the engine closes a partition
    only after its data is committed; so whatever :meth:`state` returns may be
    stored as soon as the checkpoint holding it is released.  Partitions may
    close in any order and from several threads.
    """

    @abstractmethod
    def close_partition(self, partition: Partition) -> None:
        """Record that every record of ``partition`` is committed."""

    @abstractmethod
    def state(self) -> dict[str, Any] | None:
        """The stream state as a JSON-serializable dict (``None``: nothing to store)."""

    def observe_state(self, partition: Partition, state: Mapping[str, Any]) -> None:
        """The source's own state for ``partition``, committed with its records.

        Called before :meth:`close_partition` when the stream yielded a
        :class:`~headwater.sdk.PartitionState`; cursors that derive state from
        partitions ignore it.
        """
        return None


_Range = tuple[Any, Any]


def _range_end(r: _Range) -> Any:
    return r[1]


def _range_start(r: _Range) -> Any:
    return r[0]


class ConcurrentCursor(Cursor):
    """Keeps the merged, sorted list of completed half-open ranges ``[start, end)``.

    ``start`` (stored form) is where the stream's history begins; ranges before
    it are kept in state but never reported as gaps.  Two ranges merge when
    they overlap or touch, so a stream whose windows all finished has one range.

    ``state`` may be ``None`` or ``{}`` (nothing completed), the concurrent form
    this cursor writes (see :meth:`state`), or Airbyte's sequential form
    ``{cursor_field: value}``, read as "``[start, value)`` is complete".

    Not picklable (it holds a lock): cursors live on the driver only.
    """

    def __init__(
        self,
        *,
        cursor_field: str,
        converter: StateConverter,
        state: Mapping[str, Any] | None,
        start: Any,
        boundary_fields: tuple[str, str] = ("start", "end"),
    ) -> None:
        self._cursor_field = cursor_field
        self._converter = converter
        self._boundary_fields = boundary_fields
        self._start = self._parse(start, "the cursor start")
        # Partitions are closed from the threads that commit checkpoints while
        # the driver reads state() and plans gaps(); the lock keeps the
        # read-merge-write of the range list atomic so no completed range is
        # lost and nobody sees a half-merged list.
        self._lock = threading.Lock()
        self._ranges: list[_Range] = []
        for low, high in self._ranges_from_state(state):
            self._add(low, high)

    @property
    def cursor_field(self) -> str:
        return self._cursor_field

    @property
    def converter(self) -> StateConverter:
        return self._converter

    @property
    def boundary_fields(self) -> tuple[str, str]:
        return self._boundary_fields

    # -- reading state --------------------------------------------------------------

    def _parse(self, stored: Any, what: str) -> Any:
        try:
            return self._converter.parse(stored)
        except StateError as exc:
            raise StateError(
                f"cannot read {what} of cursor field {self._cursor_field!r}: {exc.message}",
                cursor_field=self._cursor_field,
            ) from exc

    def _ranges_from_state(self, state: Mapping[str, Any] | None) -> list[_Range]:
        if state is None or (isinstance(state, Mapping) and not state):
            return []
        if not isinstance(state, Mapping):
            raise self._bad_state(state)
        if "slices" in state:
            return self._ranges_from_concurrent(state)
        if set(state) == {self._cursor_field}:
            value = self._parse(state[self._cursor_field], "the sequential state")
            return [(self._start, value)] if self._start < value else []
        raise self._bad_state(state)

    def _ranges_from_concurrent(self, state: Mapping[str, Any]) -> list[_Range]:
        field = self._cursor_field
        unknown = set(state) - _CONCURRENT_KEYS
        if unknown:
            raise self._bad_state(state, detail=f"unexpected keys {sorted(unknown)}")
        state_type = state.get("state_type", self._converter.state_type)
        if state_type != self._converter.state_type:
            raise StateError(
                f"state of cursor field {field!r} has state_type {state_type!r}, but the "
                f"stream's converter writes {self._converter.state_type!r}",
                cursor_field=field,
            )
        if state.get("cursor_field", field) != field:
            raise StateError(
                f"state was written for cursor field {state['cursor_field']!r}, but the "
                f"stream's cursor field is {field!r}; reset the stream to start over",
                cursor_field=field,
            )
        slices = state["slices"]
        if not isinstance(slices, list):
            raise self._bad_state(state, detail="'slices' must be a list")
        ranges = []
        for number, item in enumerate(slices):
            if not isinstance(item, Mapping) or "start" not in item or "end" not in item:
                raise self._bad_state(
                    state, detail=f"slice {number} must be an object with 'start' and 'end'"
                )
            low = self._parse(item["start"], f"the start of slice {number}")
            high = self._parse(item["end"], f"the end of slice {number}")
            if high < low:
                raise StateError(
                    f"slice {number} of cursor field {field!r} ends before it starts: "
                    f"{item['start']!r} > {item['end']!r}",
                    cursor_field=field,
                )
            ranges.append((low, high))
        return ranges

    def _bad_state(self, state: Any, detail: str | None = None) -> StateError:
        field = self._cursor_field
        expected = (
            f"expected null, {{{field!r}: <value>}} or "
            f"{{'state_type': {self._converter.state_type!r}, 'cursor_field': {field!r}, "
            "'slices': [{'start': <value>, 'end': <value>}, ...]}"
        )
        got = f"; {detail}" if detail else ""
        return StateError(
            f"state of cursor field {field!r} has an unknown shape{got}: {expected}, got {state!r}",
            cursor_field=field,
        )

    # -- closing partitions ---------------------------------------------------------

    def close_partition(self, partition: Partition) -> None:
        low_key, high_key = self._boundary_fields
        missing = [key for key in (low_key, high_key) if key not in partition.params]
        if missing:
            raise StateError(
                f"partition has no cursor window: params lack {missing}, expected the "
                f"boundary fields {low_key!r} and {high_key!r}",
                stream=partition.stream,
                partition=partition.id,
            )
        low = self._parse(partition.params[low_key], f"partition {partition.id!r}'s {low_key!r}")
        high = self._parse(partition.params[high_key], f"partition {partition.id!r}'s {high_key!r}")
        if high < low:
            raise StateError(
                f"partition window ends before it starts: {partition.params[low_key]!r} > "
                f"{partition.params[high_key]!r}",
                stream=partition.stream,
                partition=partition.id,
            )
        with self._lock:
            self._add(low, high)

    def _add(self, low: Any, high: Any) -> None:
        """Insert ``[low, high)`` and merge it with every range it overlaps or touches.

        The caller holds the lock (or is the constructor).  Ranges are disjoint and
        never touch, so both their starts and their ends are sorted.
        """
        if not low < high:
            return  # an empty window covers nothing
        first = bisect_left(self._ranges, low, key=_range_end)  # first with end >= low
        stop = bisect_right(self._ranges, high, key=_range_start)  # first with start > high
        if first < stop:
            low = min(low, self._ranges[first][0])
            high = max(high, self._ranges[stop - 1][1])
        self._ranges[first:stop] = [(low, high)]

    # -- planning -------------------------------------------------------------------

    def completed_ranges(self) -> list[tuple[Any, Any]]:
        """Every completed range, merged and sorted, in stored form."""
        with self._lock:
            ranges = list(self._ranges)
        return [self._serialize_range(r) for r in ranges]

    def gaps(self, until: Any) -> list[tuple[Any, Any]]:
        """The uncovered ranges within ``[start, until)``, in order, in stored form.

        This is what a stream must still read so no data is ever skipped.
        """
        return [self._serialize_range(g) for g in self._gaps(self._parse(until, "'until'"))]

    def windows(self, until: Any, step: int | float) -> list[tuple[Any, Any]]:
        """The gaps up to ``until`` cut into pieces no larger than ``converter.step(step)``."""
        size = self._converter.step(step)
        pieces = []
        for low, high in self._gaps(self._parse(until, "'until'")):
            while low < high:
                end = min(low + size, high)
                pieces.append((low, end))
                low = end
        return [self._serialize_range(p) for p in pieces]

    def low_watermark(self) -> Any:
        """The end of the contiguous completed prefix from ``start`` (else ``start``).

        Everything before it is complete; it is the value a sequential
        (single high-water mark) state could safely hold.
        """
        with self._lock:
            first = bisect_left(self._ranges, self._start, key=_range_end)
            if first < len(self._ranges) and self._ranges[first][0] <= self._start:
                return self._converter.serialize(self._ranges[first][1])
        return self._converter.serialize(self._start)

    def _gaps(self, until: Any) -> list[_Range]:
        with self._lock:
            ranges = list(self._ranges)
        gaps = []
        position = self._start
        for low, high in ranges:
            if position >= until:
                break
            if high <= position:
                continue
            if low > position:
                gaps.append((position, min(low, until)))
            position = high
        if position < until:
            gaps.append((position, until))
        return gaps

    def _serialize_range(self, r: _Range) -> tuple[Any, Any]:
        return (self._converter.serialize(r[0]), self._converter.serialize(r[1]))

    # -- state ----------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """``{"state_type", "cursor_field", "slices": [{"start", "end"}, ...]}``.

        This mirrors Airbyte's concurrent state format, and reads back through
        the constructor to the same ranges.
        """
        return {
            "state_type": self._converter.state_type,
            "cursor_field": self._cursor_field,
            "slices": [{"start": low, "end": high} for low, high in self.completed_ranges()],
        }


class FinalStateCursor(Cursor):
    """The cursor of full-refresh streams: it only says the sync finished.

    Its state is ``None`` until a partition closed, then Airbyte's marker
    ``{"__ab_full_refresh_sync_complete": True}``; the next full refresh reads
    everything again regardless.
    """

    def __init__(self) -> None:
        # Partitions close from several commit threads; the lock keeps the count exact.
        self._lock = threading.Lock()
        self._closed = 0

    @property
    def closed_count(self) -> int:
        """How many partitions have closed so far."""
        with self._lock:
            return self._closed

    def close_partition(self, partition: Partition) -> None:
        with self._lock:
            self._closed += 1

    def state(self) -> dict[str, Any] | None:
        return {FULL_REFRESH_COMPLETE_KEY: True} if self.closed_count else None
