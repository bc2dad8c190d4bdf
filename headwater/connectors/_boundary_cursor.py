"""Exactly once at the top cursor value: the keys of the rows read there ride in the state.

Shared by the database sources (``postgres``, ``mysql``): each gives a row's key
as text through one SQL expression of its own (the postgres source's
``jsonb_build_array(...)::text``, the mysql source's ``JSON_ARRAY(...)``).

A sync reads up to ``M + 1 unit`` (``M``: the largest cursor value when it
planned), and rows with value ``M`` may still commit after it planned; so the
next sync reads ``[M, M + 1 unit)`` again (the tie rule, :mod:`._cursor_windows`).
Under ``append_dedup`` the rows read twice collapse; under plain ``append`` they
would land twice.  So the partition that reads the top value reads only the
rows at ``M`` whose primary keys the plan listed (at most ``boundary_keys_limit``),
and once it is committed those keys are the state's *boundary* at the window's
end; the next sync's re-read of ``[M, M + 1 unit)`` leaves exactly those keys
out.  The keys travel to the database as data, never as SQL text.

State: the concurrent cursor's form plus ``"boundary"``, a list of
``{"end": E, "keys": [...] | null}``: the completed range ending at ``E`` was
read by a sync whose top value was ``E - 1 unit``, and these rows at that value
are already read (``null``: unknown, all of them may be).  The entries change
only when a partition closes, in the same step as its range, so they describe
committed partitions only, whatever order they commit in and however a sync
ends.  An entry whose ``E`` is no longer the end of a completed range (a later
partition covered past it) is dropped: ranges only grow, so it can never be
an end again.  A range end with no entry needs no re-read: the window ending
there was cut below the plan's top value, so its rows were complete.

State written before this module (no ``"boundary"`` key) reads as one entry
with unknown keys at the last range's end: what the tie rule always assumed.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from headwater.errors import StateError
from headwater.sdk import ConcurrentCursor, Partition, StateConverter

__all__ = ["BOUNDARY_KEY", "SEEN_AT", "SEEN_KEYS", "TOP_AT", "TOP_KEYS", "BoundaryCursor"]

#: The state's list of ``{"end", "keys"}`` entries.
BOUNDARY_KEY = "boundary"
#: Partition params of the window holding the plan's top value ``M`` (its end is ``M + 1``):
#: rows at ``TOP_AT`` are read only if their key is in ``TOP_KEYS`` (``None``: all of them).
TOP_AT = "top_at"
TOP_KEYS = "top_keys"
#: Partition params of the window re-reading an earlier top value: rows at ``SEEN_AT``
#: whose key is in ``SEEN_KEYS`` were read by an earlier sync and are left out.
SEEN_AT = "seen_at"
SEEN_KEYS = "seen_keys"


class BoundaryCursor(ConcurrentCursor):
    """The concurrent cursor, plus the keys read at each sync's top value (module docs)."""

    def __init__(self, *, cursor_field: str, converter: StateConverter,
                 state: Mapping[str, Any] | None, start: Any) -> None:
        ranges_state: Mapping[str, Any] | None = state
        entries: Any = None
        if isinstance(state, Mapping) and BOUNDARY_KEY in state:
            entries = state[BOUNDARY_KEY]
            ranges_state = {k: v for k, v in state.items() if k != BOUNDARY_KEY}
        super().__init__(cursor_field=cursor_field, converter=converter, state=ranges_state,
                         start=start)
        # Taken around the parent's own lock, so a range and its boundary entry
        # change together and state() never sees one without the other.
        self._boundary_lock = threading.Lock()
        self._tops: dict[Any, list[str] | None] = {}
        if entries is not None:
            for end, keys in self._entries_from_state(entries):
                self._tops[end] = keys
        elif self._ranges:
            self._tops[self._ranges[-1][1]] = None  # older state: keys unknown

    def _entries_from_state(self, entries: Any) -> list[tuple[Any, list[str] | None]]:
        field = self.cursor_field
        if not isinstance(entries, list):
            raise StateError(f"state of cursor field {field!r}: {BOUNDARY_KEY!r} must be a list "
                             f"of {{'end': <value>, 'keys': [...] or null}}, got {entries!r}",
                             cursor_field=field)
        parsed = []
        for number, item in enumerate(entries):
            keys = item.get("keys") if isinstance(item, Mapping) else None
            if (not isinstance(item, Mapping) or "end" not in item
                    or not (keys is None or (isinstance(keys, list)
                                             and all(isinstance(k, str) for k in keys)))):
                raise StateError(f"state of cursor field {field!r}: boundary entry {number} "
                                 "must be {'end': <value>, 'keys': [<text>, ...] or null}, "
                                 f"got {item!r}", cursor_field=field)
            parsed.append((self._parse(item["end"], f"the end of boundary entry {number}"),
                           keys))
        return parsed

    def tops(self) -> list[tuple[Any, list[str] | None]]:
        """``(end, keys)`` of each completed range end a sync's top value sits under.

        In stored form and ascending; ``keys`` ``None`` when unknown.  The plan
        re-reads ``[end - 1 unit, end)`` for each, leaving ``keys`` out.
        """
        with self._boundary_lock:
            return [(self.converter.serialize(end), keys) for end, keys in self._live()]

    def _live(self) -> list[tuple[Any, list[str] | None]]:
        with self._lock:
            ends = {high for _, high in self._ranges}
        return sorted((item for item in self._tops.items() if item[0] in ends),
                      key=lambda item: item[0])

    def close_partition(self, partition: Partition) -> None:
        with self._boundary_lock:
            super().close_partition(partition)
            if TOP_AT in partition.params:
                _, high_key = self.boundary_fields
                end = self._parse(partition.params[high_key],
                                  f"partition {partition.id!r}'s {high_key!r}")
                keys = partition.params.get(TOP_KEYS)
                self._tops[end] = None if keys is None else list(keys)
            # Entries covered by a range are dead for good; drop them as we go.
            self._tops = dict(self._live())

    def state(self) -> dict[str, Any]:
        with self._boundary_lock:
            state = super().state()
            state[BOUNDARY_KEY] = [{"end": self.converter.serialize(end), "keys": keys}
                                   for end, keys in self._live()]
        return state
