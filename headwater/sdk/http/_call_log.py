"""Moving-window call logs whose entries are stamped when the server has answered.

Why not pyrate-limiter (which the first version used): its buckets stamp a call
when it is *admitted*, and its Redis bucket takes that stamp from each caller's
own clock.  The server counts a call when it *arrives*.  A call admitted at
``t`` that is delayed on its way (a busy executor, GC, a slow connect) arrives
at ``t + d``; a call admitted one window after ``t`` and sent at once then lands
in the same server window, and the server sees ``calls + 1``.  A fixed margin
only hides delays shorter than itself; CI caught one longer than 0.75 s on a
loaded machine.

Here a call holds a *reservation* from admission until its answer arrives,
and is then stamped with the time of the answer.  Every call the server sees
in a window ``[a, a + period)`` was, at the moment the next call was admitted,
either still in flight or answered after ``a`` (it arrived after ``a`` and was
answered later), so it is counted: the budget holds whatever the delays.  In
Redis all stamps come from the Redis server's own clock (``TIME``), so hosts
with different clocks share one budget exactly.

A reservation whose caller dies is released after ``lease_s`` (it cannot be
answered any more), so a crashed executor does not hold the budget forever.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any, Protocol

__all__ = ["CallLog", "LocalCallLog", "RedisCallLog"]

#: How long a caller waits before looking again when every counted call is still in flight.
_IN_FLIGHT_POLL_S = 0.05


class CallLog(Protocol):
    """At most ``calls`` calls counted in any moving window; see the module docstring."""

    def reserve(self) -> str:
        """Block until one more call fits, and count it as in flight; return its token."""
        ...

    def try_reserve(self, token: str) -> float:
        """Count ``token`` as in flight and return a negative number if one more call
        fits now; otherwise the seconds to wait before trying again (never blocks on
        the budget, so an event loop can wait with ``asyncio.sleep``)."""
        ...

    def settle(self, token: str) -> None:
        """The call ``token`` was answered (or failed): stamp it with the current time."""
        ...


class LocalCallLog:
    """The log for the threads of one process (a task's share of a split budget)."""

    def __init__(self, calls: int, window_s: float, lease_s: float) -> None:
        self.calls = calls
        self.window_s = window_s
        self.lease_s = lease_s
        self._stamps: dict[str, float] = {}  # token -> answer time, or lease end while in flight
        self._changed = threading.Condition()

    def reserve(self) -> str:
        token = uuid.uuid4().hex
        with self._changed:
            while (wait_s := self.try_reserve(token)) >= 0:
                self._changed.wait(wait_s)
        return token

    def try_reserve(self, token: str) -> float:
        with self._changed:
            now = time.monotonic()
            self._forget_before(now - self.window_s)
            if len(self._stamps) < self.calls:
                self._stamps[token] = now + self.lease_s
                return -1.0
            return self._wait_s(min(self._stamps.values()), now)

    def settle(self, token: str) -> None:
        with self._changed:
            if token in self._stamps:
                self._stamps[token] = time.monotonic()
            self._changed.notify_all()

    def adopt(self, stamps: list[float]) -> None:
        """Count calls another process made on this share (:mod:`._share_slots`)."""
        with self._changed:
            for stamp in stamps:
                self._stamps[uuid.uuid4().hex] = stamp

    def stamps_now(self) -> list[float]:
        """The stamps still in the window, a call still out counted as answered now."""
        with self._changed:
            now = time.monotonic()
            self._forget_before(now - self.window_s)
            return [min(stamp, now) for stamp in self._stamps.values()]

    def _forget_before(self, oldest: float) -> None:
        for token in [t for t, stamp in self._stamps.items() if stamp <= oldest]:
            del self._stamps[token]

    def _wait_s(self, oldest_stamp: float, now: float) -> float:
        if oldest_stamp > now:  # every counted call is in flight: its answer frees nothing
            return _IN_FLIGHT_POLL_S  # sooner, but it starts a window; look again shortly
        return max(oldest_stamp + self.window_s - now, 0.001)


# Both scripts read the clock of the Redis server, the one clock every caller shares.
# Redis 5+ replicates a script's effects, so TIME before a write is allowed.
_RESERVE = """
local key = KEYS[1]
local calls = tonumber(ARGV[1])
local window_us = tonumber(ARGV[2])
local lease_us = tonumber(ARGV[3])
local token = ARGV[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window_us)
if redis.call('ZCARD', key) < calls then
  redis.call('ZADD', key, now + lease_us, token)
  redis.call('PEXPIRE', key, math.ceil((window_us + lease_us) / 1000))
  return -1
end
local oldest = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
if oldest > now then
  return 0
end
return oldest + window_us - now
"""

_SETTLE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZADD', KEYS[1], 'XX', now, ARGV[1])
return 1
"""


class RedisCallLog:
    """One log in Redis shared by every process of a sync (a sorted set of stamps)."""

    def __init__(self, client: Any, key: str, calls: int, window_s: float,
                 lease_s: float) -> None:
        self.key = key
        self.calls = calls
        self.window_us = int(window_s * 1_000_000)
        self.lease_us = int(lease_s * 1_000_000)
        self._reserve = client.register_script(_RESERVE)
        self._settle = client.register_script(_SETTLE)

    def reserve(self) -> str:
        token = uuid.uuid4().hex
        while (wait_s := self.try_reserve(token)) >= 0:
            time.sleep(wait_s)
        return token

    def try_reserve(self, token: str) -> float:
        wait_us = int(self._reserve(keys=[self.key], args=[
            self.calls, self.window_us, self.lease_us, token]))
        if wait_us < 0:
            return -1.0
        return wait_us / 1_000_000 if wait_us > 0 else _IN_FLIGHT_POLL_S

    def settle(self, token: str) -> None:
        self._settle(keys=[self.key], args=[token])
