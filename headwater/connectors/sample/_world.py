"""The sample source's simulated world: exact, seedable, and fast to read.

Every stream of the world has the same mechanics (only its salt differs):

* **Initial rows** ``0 .. N-1`` (N = the configured ``users`` or ``orders``):
  row ``i`` was created and last updated at ``start + i`` seconds.
* **Generation** ``k`` (``k = 1 .. generation``, ``D = days_per_generation``
  simulated days each, one by default) starts at
  ``G_k = start + N s + (k-1) D days + 1 hour``.  It first updates
  ``u_k = min(updates_per_generation, ids existing before k)`` distinct existing
  ids, drawn from ``numpy.random.default_rng([seed, salt, k])``, at
  ``G_k + j s``; then creates ``new_per_generation`` new ids (the next ids in
  order) at ``G_k + u_k + j s``.  ``updates + new < D * 86400`` keeps a
  generation inside its days, so the events of a generation always come after
  those of the one before (``D > 1``: more than 86,399 events per generation,
  for benchmarks at scale).
* The world at generation ``g`` holds every id once, at its **latest version**:
  the last generation ``<= g`` that touched it (0 = initial).  Every value of a
  row is a pure function of ``(seed, stream, id, version)``.

Time is counted internally in whole seconds after ``start`` ("offsets"): the
row with offset ``t`` has ``updated_at = start + t s``.  Nothing here loops per
row in Python: the initial region is numpy arithmetic over id ranges, and the
events of all generations are small arrays computed once per process and cached.

:class:`World` holds plain config only, so it pickles to Spark executors in a
few hundred bytes.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache, lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from headwater.errors import ConfigError

__all__ = ["STREAMS", "World"]

#: The streams every world has, in catalog order.
STREAMS = ("users", "orders")

DAY_SECONDS = 86_400
#: Quiet time between the end of the initial rows and generation 1 (and the
#: start of each later day and its generation's first event).
GENERATION_DELAY_SECONDS = 3_600
#: Upper bound of rows in one record batch ``World.batches`` yields.
MAX_BATCH_ROWS = 100_000
DEFAULT_START = datetime(2024, 1, 1, tzinfo=UTC)

_US_PER_SECOND = 1_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TIMESTAMP = pa.timestamp("us", tz="UTC")
_SALTS = {"users": 1, "orders": 2}

_FIRST_NAMES = [
    "Ada", "Alan", "Barbara", "Claude", "Donald", "Edsger", "Frances", "Grace",
    "Hedy", "Ivan", "John", "Katherine", "Leslie", "Margaret", "Niklaus", "Radia",
    "Shafi", "Tim", "Whitfield", "Yukihiro",
]  # fmt: skip
_LAST_NAMES = [
    "Lovelace", "Turing", "Liskov", "Shannon", "Knuth", "Dijkstra", "Allen", "Hopper",
    "Lamarr", "Sutherland", "Backus", "Johnson", "Lamport", "Hamilton", "Wirth",
    "Perlman", "Goldwasser", "Berners-Lee", "Diffie", "Matsumoto",
]  # fmt: skip
# Names and e-mail local parts come as whole pairs, so one ``take`` builds a column.
_POOLS = {
    "names": [f"{first} {last}" for first in _FIRST_NAMES for last in _LAST_NAMES],
    "mailboxes": [f"{first}.{last}".lower() for first in _FIRST_NAMES for last in _LAST_NAMES],
    "at_domains": ["@example.com", "@example.org", "@example.net"],
    "countries": ["US", "GB", "DE", "FR", "JP", "BR", "IN", "CA", "AU", "NG"],
    "tiers": ["bronze", "silver", "gold", "platinum"],
    "currencies": ["USD", "EUR", "GBP", "CAD", "AUD"],
    "statuses": ["placed", "paid", "shipped", "delivered"],
}


@cache
def _pool(name: str) -> pa.Array:
    """The values a column picks from, as Arrow, made on first use: ``pa.array`` imports
    pandas (about a second), which importing the source (``validate``, the page's and
    ``/metrics``' reading of a folder) must not pay; only generating rows does."""
    return pa.array(_POOLS[name])


#: Column kinds: their JSON Schema (declared) and Arrow type (read).
_KINDS: dict[str, tuple[dict[str, str], pa.DataType]] = {
    "integer": ({"type": "integer"}, pa.int64()),
    "number": ({"type": "number"}, pa.float64()),
    "string": ({"type": "string"}, pa.string()),
    "date-time": ({"type": "string", "format": "date-time"}, _TIMESTAMP),
}
_COLUMNS = {
    "users": [
        ("id", "integer"),
        ("name", "string"),
        ("email", "string"),
        ("country", "string"),
        ("age", "integer"),
        ("created_at", "date-time"),
        ("updated_at", "date-time"),
    ],
    "orders": [
        ("id", "integer"),
        ("user_id", "integer"),
        ("amount", "number"),
        ("currency", "string"),
        ("status", "string"),
        ("created_at", "date-time"),
        ("updated_at", "date-time"),
    ],
}

_I64 = npt.NDArray[np.int64]
_U64 = npt.NDArray[np.uint64]


@dataclass(frozen=True)
class World:
    """The simulated world one sample source reads, as of ``generation``.

    Guarantees: the same fields give byte-identical rows in any process; each
    id appears exactly once in :meth:`table`; :meth:`batches` over any set of
    disjoint offset ranges covering ``[0, now_offset)`` yields exactly
    :meth:`table`'s rows.
    """

    seed: int = 42
    users: int = 1000
    orders: int = 5000
    generation: int = 0
    updates_per_generation: int = 10
    new_per_generation: int = 10
    start: datetime = DEFAULT_START
    #: When > 0, user ids ``N-1, 2N-1, ...`` (every N-th row) have ``age = "unknown"``.
    bad_value_every: int = 0
    #: 2 adds the ``loyalty_tier`` column to ``users``.
    schema_version: int = 1
    #: Simulated days per generation: a generation's events are one per second within them.
    days_per_generation: int = 1

    def __post_init__(self) -> None:
        counts = ("seed", "users", "orders", "generation", "bad_value_every")
        for name in (*counts, "updates_per_generation", "new_per_generation"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0", field=f"source.config.{name}")
        if self.days_per_generation < 1:
            raise ConfigError("days_per_generation must be >= 1",
                              field="source.config.days_per_generation")
        span = self.days_per_generation * DAY_SECONDS
        if self.updates_per_generation + self.new_per_generation >= span:
            raise ConfigError(
                f"updates_per_generation + new_per_generation must be < {span}: one "
                "generation's events happen one per second within its simulated days "
                "(days_per_generation gives it more)",
                field="source.config.updates_per_generation",
            )
        if self.schema_version not in (1, 2):
            raise ConfigError("schema_version must be 1 or 2", field="source.config.schema_version")
        if self.start.tzinfo is None:
            raise ConfigError("start must carry a time zone", field="source.config.start")
        object.__setattr__(self, "start", self.start.astimezone(UTC))

    # -- time ---------------------------------------------------------------

    def initial_rows(self, stream: str) -> int:
        """N: how many rows ``stream`` had before generation 1."""
        _check_stream(stream)
        return self.users if stream == "users" else self.orders

    def at(self, offset: int) -> datetime:
        """The date-time ``offset`` seconds after ``start``."""
        return self.start + timedelta(seconds=int(offset))

    def offset_ceil(self, moment: datetime) -> int:
        """The first whole-second offset at or after ``moment``.

        A row with offset ``t`` lies in ``[a, b)`` exactly when
        ``offset_ceil(a) <= t < offset_ceil(b)``, also for boundaries with
        microseconds or before ``start`` (negative offsets).
        """
        return -(-self.micros_after_start(moment) // _US_PER_SECOND)

    def micros_after_start(self, moment: datetime) -> int:
        """Exact whole microseconds from ``start`` to ``moment`` (negative before it)."""
        return (moment - self.start) // timedelta(microseconds=1)

    def now_offset(self, stream: str) -> int:
        """Exclusive end of the latest event in the world: nothing is at or after it.

        ``N`` when no generation (yet) has events, so ``[start, start + now)``
        is empty for an empty world.
        """
        line = self.timeline(stream)
        return int(line.ends[-1]) if len(line.ends) else self.initial_rows(stream)

    def cut_offsets(self, stream: str, rows_per_partition: int) -> _I64:
        """Sorted offsets where partition windows should end, so each holds data.

        Every ``rows_per_partition`` seconds through the initial region and
        through each generation's events, plus the end of each.  The quiet
        time before a generation has no cut, so it folds into the generation's
        first window.  No window between two consecutive cuts holds more than
        ``rows_per_partition`` rows.
        """
        if rows_per_partition < 1:
            raise ConfigError(
                "rows_per_partition must be >= 1", field="source.config.rows_per_partition"
            )
        n = self.initial_rows(stream)
        line = self.timeline(stream)
        parts = [np.arange(rows_per_partition, n, rows_per_partition, dtype=np.int64)]
        parts.append(np.array([n], dtype=np.int64))
        for begin, end in zip(line.starts.tolist(), line.ends.tolist(), strict=True):
            parts.append(np.arange(begin + rows_per_partition, end, rows_per_partition))
            parts.append(np.array([end], dtype=np.int64))
        cuts: _I64 = np.unique(np.concatenate(parts).astype(np.int64))
        return cuts[cuts > 0]

    # -- rows ---------------------------------------------------------------

    def timeline(self, stream: str) -> Timeline:
        """The events of generations ``1 .. generation`` (cached per process)."""
        return _timeline(
            self.seed,
            _SALTS[_check_stream(stream)],
            self.initial_rows(stream),
            self.generation,
            self.updates_per_generation,
            self.new_per_generation,
            self.days_per_generation,
        )

    def batches(self, stream: str, lo: int, hi: int) -> Iterator[pa.RecordBatch]:
        """Record batches of the rows whose current ``updated_at`` offset is in ``[lo, hi)``.

        Each id at its current version only; batches hold at most
        :data:`MAX_BATCH_ROWS` rows and come in ``updated_at`` order.
        """
        n = self.initial_rows(stream)
        line = self.timeline(stream)
        first, last = max(lo, 0), min(hi, n)
        for chunk in range(first, last, MAX_BATCH_ROWS):
            stop = min(chunk + MAX_BATCH_ROWS, last)
            ids = np.arange(chunk, stop, dtype=np.int64)
            # Initial rows touched by a generation now live at their event time.
            touched = line.touched_initial
            moved = touched[np.searchsorted(touched, chunk) : np.searchsorted(touched, stop)]
            if len(moved):
                keep = np.ones(len(ids), dtype=bool)
                keep[moved - chunk] = False
                ids = ids[keep]
            if len(ids):
                yield self._batch(stream, ids, np.zeros(len(ids), np.int64), ids, ids)
        begin = int(np.searchsorted(line.times, lo))
        end = int(np.searchsorted(line.times, hi))
        for chunk in range(begin, end, MAX_BATCH_ROWS):
            window = slice(chunk, min(chunk + MAX_BATCH_ROWS, end))
            ids = line.ids[window]
            created = self._created(stream, ids)
            yield self._batch(stream, ids, line.versions[window], created, line.times[window])

    def count(self, stream: str, lo: int, hi: int) -> int:
        """How many rows :meth:`batches` yields for ``[lo, hi)``, without making them."""
        n = self.initial_rows(stream)
        line = self.timeline(stream)
        first, last = max(lo, 0), min(hi, n)
        initial = 0
        if first < last:
            touched = line.touched_initial
            moved = int(np.searchsorted(touched, last) - np.searchsorted(touched, first))
            initial = last - first - moved
        events = int(np.searchsorted(line.times, hi) - np.searchsorted(line.times, lo))
        return initial + events

    def table(self, stream: str) -> pa.Table:
        """The whole current world of ``stream``, sorted by id."""
        batches = list(self.batches(stream, 0, self.now_offset(stream)))
        table = pa.Table.from_batches(batches, schema=self.arrow_schema(stream))
        return table.sort_by("id")

    def columns(self, stream: str) -> list[tuple[str, str]]:
        """``(name, kind)`` of every column, in order; kind is a key of :data:`_KINDS`."""
        columns = list(_COLUMNS[_check_stream(stream)])
        if stream == "users" and self.schema_version >= 2:
            columns.append(("loyalty_tier", "string"))
        return columns

    def arrow_schema(self, stream: str) -> pa.Schema:
        """The Arrow schema of the batches; ``age`` is a string when bad values are on."""
        return pa.schema(
            (name, pa.string() if name == "age" and self.bad_value_every else _KINDS[kind][1])
            for name, kind in self.columns(stream)
        )

    def json_schema(self, stream: str) -> dict[str, Any]:
        """The declared record schema: what the destination's typed columns are."""
        return {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {name: dict(_KINDS[kind][0]) for name, kind in self.columns(stream)},
        }

    def _created(self, stream: str, ids: _I64) -> _I64:
        """Creation offsets: ``id`` for initial rows, the creating generation's slot otherwise."""
        n = self.initial_rows(stream)
        created = ids.copy()
        fresh = ids >= n
        if fresh.any():
            per_gen = self.new_per_generation
            nth = ids[fresh] - n
            k = nth // per_gen + 1
            updated = np.minimum(self.updates_per_generation, n + (k - 1) * per_gen)
            created[fresh] = (_generation_start(n, k, self.days_per_generation) + updated
                              + nth % per_gen)
        return created

    def _batch(
        self, stream: str, ids: _I64, versions: _I64, created: _I64, updated: _I64
    ) -> pa.RecordBatch:
        start_us = (self.start - _EPOCH) // timedelta(microseconds=1)
        times = [
            pa.array(start_us + offsets * _US_PER_SECOND, type=_TIMESTAMP)
            for offsets in (created, updated)
        ]
        keys = _Keys(self.seed, _SALTS[stream], ids, versions)
        columns = self._order_columns(keys) if stream == "orders" else self._user_columns(keys)
        columns[5:5] = times  # created_at, updated_at follow the first five columns
        return pa.RecordBatch.from_arrays(columns, schema=self.arrow_schema(stream))

    def _user_columns(self, keys: _Keys) -> list[pa.Array]:
        person = keys.stable("person") % len(_POOLS["names"])
        # Plus-addressing makes every version's e-mail differ: ada.lovelace17+3@example.com.
        suffix: pa.Array | str = ""
        if keys.versions.any():
            version = pc.cast(pa.array(keys.versions), pa.string())
            suffix = pc.if_else(
                pa.array(keys.versions > 0), pc.binary_join_element_wise("+", version, ""), ""
            )
        email = pc.binary_join_element_wise(
            _pool("mailboxes").take(person),
            pc.cast(pa.array(keys.ids), pa.string()),
            suffix,
            _pick(_pool("at_domains"), keys.stable("domain")),
            "",
        )
        # A year older with every version, so an update always shows in the row.
        age_values = 18 + (keys.stable("age") % 70 + keys.versions) % 70
        age: pa.Array = pa.array(age_values)
        if self.bad_value_every:
            bad = (keys.ids + 1) % self.bad_value_every == 0
            age = pc.if_else(pa.array(bad), "unknown", pc.cast(age, pa.string()))
        columns = [
            pa.array(keys.ids),
            _pool("names").take(person),
            email,
            _pick(_pool("countries"), keys.stable("country")),
            age,
        ]
        if self.schema_version >= 2:
            columns.append(_pick(_pool("tiers"), keys.versioned("loyalty_tier")))
        return columns

    def _order_columns(self, keys: _Keys) -> list[pa.Array]:
        if self.users:
            user_id = pa.array(keys.stable("user_id") % self.users)
        else:  # no users to belong to
            user_id = pa.nulls(len(keys.ids), pa.int64())
        cents = 100 + keys.versioned("amount") % 99_900
        statuses = len(_POOLS["statuses"])
        status = (keys.stable("status") % statuses + keys.versions) % statuses
        return [
            pa.array(keys.ids),
            user_id,
            pa.array(cents / 100.0),
            _pick(_pool("currencies"), keys.stable("currency")),
            _pick(_pool("statuses"), status),
        ]


@dataclass(frozen=True)
class Timeline:
    """What generations ``1 .. g`` did to one stream, reduced to current versions.

    ``ids`` / ``times`` / ``versions`` hold every id a generation touched, once,
    at its latest event, sorted by time.  ``touched_initial`` lists (sorted) the
    initial ids among them, which no longer sit at their initial offset.
    ``starts`` / ``ends`` bound each generation that had events.
    """

    ids: _I64
    times: _I64
    versions: _I64
    touched_initial: _I64
    starts: _I64
    ends: _I64


@lru_cache(maxsize=16)
def _timeline(seed: int, salt: int, n: int, generation: int, updates: int, new: int,
              days: int = 1) -> Timeline:
    ids: list[_I64] = []
    versions: list[_I64] = []
    times: list[_I64] = []
    starts: list[int] = []
    for k in range(1, generation + 1):
        existing = n + (k - 1) * new
        count = min(updates, existing)
        if count + new == 0:
            continue
        begin = int(_generation_start(n, k, days))
        rng = np.random.default_rng([seed, salt, k])
        changed = rng.choice(existing, size=count, replace=False).astype(np.int64)
        ids.append(np.concatenate([changed, np.arange(existing, existing + new, dtype=np.int64)]))
        times.append(begin + np.arange(count + new, dtype=np.int64))
        versions.append(np.full(count + new, k, dtype=np.int64))
        starts.append(begin)
    empty = np.zeros(0, dtype=np.int64)
    all_ids = np.concatenate(ids) if ids else empty
    all_times = np.concatenate(times) if times else empty
    all_versions = np.concatenate(versions) if versions else empty
    # The last event of each id wins: first occurrence in the reversed arrays.
    unique_ids, first_reversed = np.unique(all_ids[::-1], return_index=True)
    latest = np.sort(len(all_ids) - 1 - first_reversed)
    starts_arr = np.array(starts, dtype=np.int64)
    line = Timeline(
        ids=all_ids[latest],
        times=all_times[latest],
        versions=all_versions[latest],
        touched_initial=unique_ids[unique_ids < n].astype(np.int64),
        starts=starts_arr,
        ends=np.array([t[-1] + 1 for t in times], dtype=np.int64),
    )
    for array in (line.ids, line.times, line.versions, line.touched_initial, starts_arr, line.ends):
        array.setflags(write=False)
    return line


def _generation_start(n: int, k: _I64 | int, days: int = 1) -> Any:
    """G_k as an offset: after the initial rows, ``days`` per generation, one hour in."""
    return n + (k - 1) * days * DAY_SECONDS + GENERATION_DELAY_SECONDS


def _check_stream(stream: str) -> str:
    if stream not in _SALTS:
        raise ConfigError(
            f"the sample source has no stream {stream!r}; it has: {', '.join(STREAMS)}",
            stream=stream,
        )
    return stream


class _Keys:
    """Deterministic 64-bit hashes of (seed, stream, field, id[, version]).

    splitmix64's finaliser over numpy uint64 arrays (wrap-around is the point),
    so every column value is a pure function of its row's identity.
    """

    def __init__(self, seed: int, salt: int, ids: _I64, versions: _I64) -> None:
        self.ids = ids
        self.versions = versions
        self._seed = seed
        self._salt = salt
        self._ids = _mix(ids.astype(np.uint64))

    def stable(self, field: str) -> _I64:
        """Same for every version of an id (name, country, ...)."""
        return _to_index(_mix(self._ids ^ self._field_key(field)))

    def versioned(self, field: str) -> _I64:
        """Changes with the version (amount, tier, ...)."""
        mixed = _mix(self._ids ^ self._field_key(field))
        return _to_index(_mix(mixed + self.versions.astype(np.uint64) * _GOLDEN))

    def _field_key(self, field: str) -> np.uint64:
        parts = (self._seed, self._salt, zlib.crc32(field.encode()))
        key = np.zeros(1, dtype=np.uint64)
        for part in parts:
            key = _mix(key ^ np.uint64(part & 0xFFFF_FFFF_FFFF_FFFF))
        return np.uint64(key[0])


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(x: _U64) -> _U64:
    x = x + _GOLDEN
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def _to_index(hashes: _U64) -> _I64:
    """Non-negative int64 from a hash (top bit dropped), ready for ``%``."""
    return (hashes >> np.uint64(1)).astype(np.int64)


def _pick(choices: pa.Array, hashes: _I64) -> pa.Array:
    return choices.take(pa.array(hashes % len(choices)))
