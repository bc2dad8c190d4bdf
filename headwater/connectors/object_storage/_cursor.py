"""The object storage cursor: which objects (and which parts of them) are committed.

State (a JSON object)::

    {"state_type": "object-keys",
     "floor": "2024/01/31/z.csv",                    # keys <= floor: done, forgotten
     "recent": {"2024/02/01/a.csv": "<etag>", ...},  # done keys above the floor
     "in_flight": {"2024/02/01/big.jsonl": {         # objects read in several partitions
         "identity": "<etag>", "unit": "bytes", "total": 734003200,
         "done": [[0, 268435456]], "records": null}}}

Why a floor plus a bounded set of recent keys, and not a modification time:
keys are what every store lists in order (S3 lists lexicographically and can
start after a key), while modification times are set by writers' clocks, repeat
within a second and survive copies; a high-water mark on either alone loses an
object that lands late with a lower value.  So, as the seed's ring buffer does,
the state remembers the last ``recent_keys`` processed keys with their identity:
an object whose key is above the floor and not remembered is new, whatever
its place in the order.  Only when more than ``recent_keys`` keys have been
processed are the lowest forgotten and the floor raised to the highest of them;
an object arriving later still with a key at or below the floor is not seen
(make ``recent_keys`` larger than the number of objects that can arrive out
of order between two syncs).

``in_flight`` keeps, per object read in several partitions, its identity and
the committed ranges (bytes of a CSV/JSONL object, row groups of a Parquet
object) and, when known, the records committed (Parquet row groups know their
row count; byte ranges do not).  A sync that failed half way through a large
object therefore resumes with exactly the ranges not yet committed; a killed
sync resumes its persisted plan, which skips committed checkpoints.

``acks`` (notification discovery only, see :mod:`._notifications`): the receipt
handles of the queue messages whose objects this cursor saw complete, for the
stream to delete once the state holding them is saved.  A cursor loaded from
state starts with none: those were deleted after that save, or, after a crash
in between, come back from the queue and are skipped as already read.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from headwater.connectors._ranges import merge_range
from headwater.errors import StateError
from headwater.sdk import Cursor, Partition

__all__ = ["STATE_TYPE", "Decision", "ObjectCursor"]

STATE_TYPE = "object-keys"


@dataclass(frozen=True)
class Decision:
    """What to do with one listed object: ``read`` it (``ranges``: only these parts, in
    the unit of ``unit``; ``None``: all of it), or not (``read=False``, with why)."""

    read: bool
    why: str
    unit: str | None = None
    ranges: tuple[tuple[int, int], ...] | None = None


#: The decisions a listing of a million objects makes a million times, made once.
_NEW = Decision(True, "new")
_ALREADY_READ = Decision(False, "already read")
_BELOW_FLOOR = Decision(False, "at or below the state's floor key")


def _gaps(done: list[list[int]], total: int) -> tuple[tuple[int, int], ...]:
    gaps, position = [], 0
    for a, b in done:
        if a > position:
            gaps.append((position, a))
        position = max(position, b)
    if position < total:
        gaps.append((position, total))
    return tuple(gaps)


class ObjectCursor(Cursor):
    """Turns closed object partitions into the state described in the module docstring.

    Not picklable (it holds a lock): it lives on the driver.
    """

    def __init__(self, state: Mapping[str, Any] | None, recent_keys: int,
                 changed_objects: str = "reread") -> None:
        self._recent_keys = recent_keys
        self._changed = changed_objects
        # Partitions close from the commit threads of several lanes while the
        # engine reads state(): the lock keeps each close's read-merge-write whole.
        self._lock = threading.Lock()
        self._floor: str | None = None
        self._recent: dict[str, str] = {}
        # The keys of _recent as a min-heap: forgetting the lowest key costs a pop,
        # not a sort of all recent keys, when a million objects close one by one.
        self._lowest: list[str] = []
        self._in_flight: dict[str, dict[str, Any]] = {}
        self._acks: list[str] = []
        if state:
            self._load(state)

    def _load(self, state: Mapping[str, Any]) -> None:
        if state.get("state_type") != STATE_TYPE:
            raise StateError(f"object storage state must have state_type {STATE_TYPE!r}, "
                             f"got {state.get('state_type')!r}; reset the stream to start over")
        floor = state.get("floor")
        recent = state.get("recent") or {}
        in_flight = state.get("in_flight") or {}
        if not (floor is None or isinstance(floor, str)) or not isinstance(recent, Mapping) \
                or not isinstance(in_flight, Mapping):
            raise StateError("object storage state needs 'floor' (a key or null), 'recent' and "
                             f"'in_flight' (objects), got {dict(state)!r}")
        self._floor = floor
        self._recent = {str(k): str(v) for k, v in recent.items()}
        self._lowest = list(self._recent)
        heapq.heapify(self._lowest)
        self._in_flight = {str(k): {"identity": v["identity"], "unit": v["unit"],
                                    "total": int(v["total"]),
                                    "done": [[int(a), int(b)] for a, b in v["done"]],
                                    "records": v.get("records")}
                           for k, v in in_flight.items()}

    # ------------------------------------------------------------------ planning

    def decide(self, key: str, identity: str) -> Decision:
        """Whether (and which parts of) a listed object must be read."""
        with self._lock:
            flight = self._in_flight.get(key)
            if flight is not None:
                if flight["identity"] == identity:
                    return Decision(True, "resume", flight["unit"],
                                    _gaps(flight["done"], flight["total"]))
                return self._on_change("changed while it was being read")
            if key in self._recent:
                if self._recent[key] == identity:
                    return _ALREADY_READ
                return self._on_change("changed after it was read")
            if self._floor is not None and key <= self._floor:
                return _BELOW_FLOOR
            return _NEW

    def all_new(self, keys: Sequence[str]) -> bool:
        """Whether :meth:`decide` says ``new`` for every one of ``keys`` (whatever their
        identities): none is in flight or remembered, all sort above the floor.  A page
        of a listing is decided at once this way, in a few C-level passes; on a first
        sync (no state) at no cost at all."""
        with self._lock:
            if self._floor is not None and keys and min(keys) <= self._floor:
                return False
            return (not self._recent or self._recent.keys().isdisjoint(keys)) and \
                (not self._in_flight or self._in_flight.keys().isdisjoint(keys))

    def skip_below(self) -> str | None:
        """The key a listing may start after: the floor, unless an object in flight sits
        at or below it (its remaining parts must still be listed and read)."""
        with self._lock:
            floor = self._floor
            if floor is None or any(key <= floor for key in self._in_flight):
                return None
            return floor

    def _on_change(self, what: str) -> Decision:
        if self._changed == "ignore":
            return Decision(False, f"{what}; changed_objects=ignore")
        return Decision(True, f"{what}; changed_objects=reread")

    # ------------------------------------------------------------------ closing

    def close_partition(self, partition: Partition) -> None:
        params = partition.params
        if params.get("unit") == "objects":
            self._close_group(partition)
            return
        try:
            key, identity = str(params["key"]), str(params["identity"])
            unit, start, end, total = params["unit"], int(params["start"]), \
                int(params["end"]), int(params["total"])
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"partition is not an object partition: {exc}",
                             stream=partition.stream, partition=partition.id) from exc
        messages = params.get("messages") or {}
        with self._lock:
            if start <= 0 and end >= total:
                self._complete(key, identity, messages)
                return
            flight = self._in_flight.get(key)
            if flight is None or flight["identity"] != identity or flight["unit"] != unit:
                flight = {"identity": identity, "unit": unit, "total": total, "done": [],
                          "records": None}
                self._in_flight[key] = flight
            flight["done"] = merge_range(flight["done"], start, end)
            if params.get("records") is not None:
                flight["records"] = int(flight["records"] or 0) + int(params["records"])
            if not _gaps(flight["done"], total):
                self._complete(key, identity, messages)

    def _close_group(self, partition: Partition) -> None:
        """Every object of a ``unit: objects`` partition is done, each under its key."""
        try:
            members = [(str(key), str(identity))
                       for key, identity, _ in partition.params["objects"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"partition is not an object group partition: {exc}",
                             stream=partition.stream, partition=partition.id) from exc
        messages = partition.params.get("messages") or {}
        with self._lock:
            for key, identity in members:
                self._complete(key, identity, messages)

    def _complete(self, key: str, identity: str, messages: Mapping[str, Any]) -> None:
        """``key`` is read whole; the handles of the messages that announced it (a
        partition's ``messages``, by key) may be deleted once this state is saved."""
        self._acks.extend(str(handle) for handle in messages.get(key) or ())
        self._in_flight.pop(key, None)
        if key not in self._recent:
            heapq.heappush(self._lowest, key)
        self._recent[key] = identity
        # Forget the lowest keys past recent_keys; the floor becomes the highest forgotten.
        while len(self._recent) > self._recent_keys:
            old = heapq.heappop(self._lowest)
            del self._recent[old]
            if self._floor is None or old > self._floor:
                self._floor = old

    def state(self) -> dict[str, Any]:
        with self._lock:
            state: dict[str, Any] = {
                "state_type": STATE_TYPE,
                "floor": self._floor,
                "recent": dict(sorted(self._recent.items())),
                "in_flight": {k: {**v, "done": [list(r) for r in v["done"]]}
                              for k, v in sorted(self._in_flight.items())},
            }
            if self._acks:
                state["acks"] = list(self._acks)
            return state
