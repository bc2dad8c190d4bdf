"""The cursor windows of an incremental database read: the gaps, the tie re-read, the top.

Shared by the database sources (``postgres``, ``mysql``); each answers the three
questions the plan asks its database through :class:`WindowQueries`, and this
module decides the windows.  The **tie rule** (the postgres source's page,
``docs/connectors/postgres.md``):

* the plan reads up to ``until = M + 1 unit``, where ``M`` is the largest cursor
  value visible when planning (1 unit: 1 for integers, 1 microsecond for
  date-times, both databases' resolution), so every row visible with cursor
  ``< M`` is read, and the rows at ``M`` whose primary keys the plan listed
  (:mod:`._boundary_cursor`: they become the state's boundary keys);
* a sync also reads ``[M_prev, M_prev + 1 unit)`` again, the last value the
  previous sync covered, leaving out the keys it read there: rows with that
  value committed after the previous sync planned are read, each once.

Without the keys (a table with no primary key, or more than
``boundary_keys_limit`` rows at ``M``) an ``append`` plan stops short: it reads
up to ``M`` only and leaves the rows at ``M`` to a later sync, which reads them
whole, once; other modes read up to ``M + 1`` and re-read all of ``[M, M + 1)``
next time, for ``append_dedup`` to collapse.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Protocol

from headwater.connectors._boundary_cursor import (
    SEEN_AT,
    SEEN_KEYS,
    TOP_AT,
    TOP_KEYS,
    BoundaryCursor,
)
from headwater.sdk import StateConverter

__all__ = ["WindowQueries", "partition_count", "plan_windows", "unit"]

log = logging.getLogger(__name__)


class WindowQueries(Protocol):
    """What the plan asks the database (values in the cursor's stored form)."""

    def top_value(self) -> Any:
        """The cursor column's largest value as a record value, None for an empty table."""

    def keys_at(self, value: Any, limit: int) -> list[str] | None:
        """The key texts of the rows at ``value``; None without a primary key or over
        ``limit`` rows."""

    def cut(self, low: Any, high: Any) -> list[tuple[Any, Any]]:
        """``[low, high)`` cut into windows of about the same number of rows."""


def partition_count(rows: int, rows_per_partition: int, max_partitions: int) -> int:
    return max(1, min(max_partitions, math.ceil(rows / rows_per_partition)))


def unit(value: Any, converter: StateConverter) -> Any:
    """The smallest step of a cursor value: 1, or 1 microsecond."""
    return 1 if isinstance(value, int) else converter.step(1e-6)


def plan_windows(queries: WindowQueries, cursor: BoundaryCursor, *, keys_limit: int,
                 has_primary_key: bool, exact_append: bool, stream: str
                 ) -> list[dict[str, Any]]:
    """Params of the cursor windows (stored form) covering the gaps and the tie re-read.

    Each is ``{"start", "end"}``, plus the boundary params of
    :mod:`._boundary_cursor` on the window holding the top value and on each
    window re-reading an earlier one.  ``exact_append``: the rows land with plain
    ``append`` (no MERGE to collapse a row read twice), so without boundary keys
    the plan stops short of the top value rather than read it twice.
    """
    converter = cursor.converter
    top_value = queries.top_value()
    if top_value is None:
        return []
    top = converter.parse_record_value(top_value)
    top_keys = queries.keys_at(converter.serialize(top), keys_limit)
    hold_back = top_keys is None and exact_append
    if hold_back:
        why = ("has no primary key" if not has_primary_key
               else f"has more than boundary_keys_limit ({keys_limit}) rows at it")
        log.warning("stream %s: the top cursor value %s %s, so this append reads below it "
                    "only; its rows are read, once, by a sync after a larger value appears "
                    "(add a primary key, raise boundary_keys_limit, or use append_dedup to "
                    "read them now)", stream, converter.serialize(top), why)
    until = top if hold_back else top + unit(top, converter)
    gaps = [[converter.parse(lo), converter.parse(hi)]
            for lo, hi in cursor.gaps(converter.serialize(until))]
    seen: list[tuple[Any, list[str]]] = []
    for stored_end, keys in cursor.tops():
        end = converter.parse(stored_end)
        if end > until:
            continue  # the top value went down (rows deleted): nothing above it to read
        value = end - unit(end, converter)
        if keys is None and exact_append:
            log.warning("stream %s: the state does not say which rows at cursor value %s were "
                        "read (written by an older Headwater, or under append_dedup), so this "
                        "append does not read that value again; rows with it committed after "
                        "the sync that read it planned are not read", stream,
                        converter.serialize(value))
            continue
        if keys is not None:
            if (end == until and top_keys is not None and value == top
                    and set(top_keys) <= set(keys)):
                continue  # still the top value and no new key at it: nothing to read
            seen.append((value, keys))
        following = next((g for g in gaps if g[0] == end), None)
        if following is not None:
            following[0] = value
        else:
            gaps.append([value, end])
    gaps.sort(key=lambda g: g[0])
    windows: list[dict[str, Any]] = []
    for low, high in gaps:
        for start, stop in queries.cut(converter.serialize(low), converter.serialize(high)):
            params: dict[str, Any] = {"start": start, "end": stop}
            a, b = converter.parse(start), converter.parse(stop)
            for value, keys in seen:
                if a <= value < b:
                    params[SEEN_AT], params[SEEN_KEYS] = converter.serialize(value), keys
            if not hold_back and a <= top < b:
                params[TOP_AT], params[TOP_KEYS] = converter.serialize(top), top_keys
            windows.append(params)
    return windows
