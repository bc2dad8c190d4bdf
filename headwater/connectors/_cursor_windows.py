"""The tie rule's plan, shared by the database sources: cursor windows from a cursor's state.

The PostgreSQL source documents the rule (``docs/connectors/postgres.md``,
"Incremental, and the tie rule"): windows are half-open ``[start, end)``, a
sync reads up to ``M + 1 unit`` (``M``: the largest cursor value when it
plans) and re-reads ``[M_prev, M_prev + 1 unit)``, leaving out the keys an
earlier sync read there (:class:`~headwater.connectors._boundary.BoundaryCursor`).
The algorithm is the same for every database; only three questions go to the
database, and each source answers them in its own SQL (:class:`WindowQueries`):
psycopg for PostgreSQL, Spark's JDBC reader for ``jdbc``.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Protocol

from headwater.connectors._boundary import (
    SEEN_AT,
    SEEN_KEYS,
    TOP_AT,
    TOP_KEYS,
    BoundaryCursor,
)
from headwater.sdk import StateConverter

__all__ = ["WindowQueries", "cursor_windows", "partition_count", "unit"]

log = logging.getLogger(__name__)


class WindowQueries(Protocol):
    """What the plan asks the database (values in the converter's stored form)."""

    def top_value(self) -> Any:
        """The cursor column's largest value as the driver returns it (None: no rows)."""

    def keys_at(self, value: Any) -> list[str] | None:
        """The keys of the rows at ``value`` (None: no primary key, or too many)."""

    def cut(self, low: Any, high: Any) -> list[tuple[Any, Any]]:
        """``[low, high)`` cut into windows of similar row counts."""


def partition_count(rows: int, rows_per_partition: int, max_partitions: int) -> int:
    """How many partitions ``rows`` rows make, at most ``max_partitions``."""
    return max(1, min(max_partitions, math.ceil(rows / rows_per_partition)))


def unit(value: Any, converter: StateConverter) -> Any:
    """The smallest step of a cursor value: 1, or 1 microsecond."""
    return 1 if isinstance(value, int) else converter.step(1e-6)


def cursor_windows(queries: WindowQueries, cursor: BoundaryCursor, *, has_key: bool,
                   keys_limit: int, exact_append: bool, stream: str) -> list[dict[str, Any]]:
    """Params of the cursor windows (stored form) covering the gaps and the tie re-read.

    Each is ``{"start", "end"}``, plus the boundary params of
    :mod:`~headwater.connectors._boundary` on the window holding the
    top value and on each window re-reading an earlier one.  ``exact_append``:
    the rows land with plain ``append`` (no MERGE to collapse a row read
    twice), so without boundary keys the plan stops short of the top value
    rather than read it twice.
    """
    converter = cursor.converter
    top_value = queries.top_value()
    if top_value is None:
        return []
    top = converter.parse_record_value(top_value)
    top_keys = queries.keys_at(converter.serialize(top))
    hold_back = top_keys is None and exact_append
    if hold_back:
        why = ("has no primary key" if not has_key
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
