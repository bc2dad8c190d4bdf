"""Call budgets that hold for a whole sync, however many executors run it.

A :class:`CallBudget` says "at most ``calls`` requests in any moving window of
``period_s`` seconds" for the calls to one host whose path matches a pattern
(a moving-window call-rate policy, as the Airbyte CDK has).  Two ways to hold it:

* **Split (default).**  The engine tells the stream at plan time how many
  Spark tasks run at once (``tasks``); each gets ``calls // tasks`` of the
  budget.  A share is a slot kept on the machine (:mod:`._share_slots`), held by
  the process whose task spends it and handed with its stamps to the next one,
  so however many worker processes Spark takes turns with, at most ``tasks``
  shares are spent in any window on one machine and their sum never exceeds
  the budget.  Executors on several machines keep shares each.
* **Redis.**  With ``redis_url`` set, every process shares one call log in
  Redis under one key, so the whole budget is shared exactly across a cluster
  (and nothing is lost to uneven splitting).

Either way a call is counted from the moment it is admitted until one window
after its answer arrived (:mod:`headwater.sdk.http._call_log` says why that,
unlike counting at admission, holds however long a call is delayed on its way).
A small margin (``margin_s``, default 0.25 s) is still added to the window for
servers whose own clock or window edge is coarser than ours.

``Retry-After`` and ``X-RateLimit-Remaining: 0`` responses pause every request of
the process that calls the same host (:meth:`CallGate.pause_for`).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from headwater.errors import ConfigError
from headwater.sdk.http._call_log import CallLog, LocalCallLog, RedisCallLog
from headwater.sdk.http._share_slots import ShareSlot

__all__ = ["CallBudget", "CallGate", "split_share"]

T = TypeVar("T")

#: Added to a budget's window by default (seconds), see the module docstring.
WINDOW_MARGIN_S = 0.25


@dataclass(frozen=True)
class CallBudget:
    """At most ``calls`` requests per moving ``period_s`` seconds, per host.

    ``path_pattern`` (a regular expression searched in the URL path) narrows
    the budget to some endpoints, e.g. ``^/v3/surveys/[^/]+/responses``;
    ``None`` counts every call to the host.
    """

    calls: int
    period_s: float
    path_pattern: str | None = None
    margin_s: float = WINDOW_MARGIN_S

    def matches(self, url: str) -> bool:
        return self.path_pattern is None or re.search(self.path_pattern,
                                                      urlsplit(url).path) is not None

    def key(self, url: str) -> str:
        """The call log this call counts against: host, pattern and period."""
        return f"{_host(url)}|{self.path_pattern or '*'}|{self.period_s}"


def split_share(budget: CallBudget, tasks: int) -> int:
    """The calls one of ``tasks`` concurrent tasks may make per window."""
    share = budget.calls // max(tasks, 1)
    if share < 1:
        raise ConfigError(
            f"a budget of {budget.calls} calls per {budget.period_s:g} s cannot be split across "
            f"{tasks} concurrently running tasks; configure rate_limit.redis_url to share one "
            "budget exactly, or run with fewer executor cores", field="rate_limit")
    return share


# Process-wide call logs and pauses, keyed by what they guard.  The lock makes
# sure two clients of one process never create two logs for one key (which
# would double the share).
_registry_lock = threading.Lock()
_logs: dict[tuple[Any, ...], CallLog] = {}
_shares: dict[tuple[Any, ...], _HeldShare] = {}
_paused_until: dict[str, float] = {}

#: A reservation whose call never reports back (its process died) is released after
#: this long, or after a few request timeouts if those are longer.
MIN_LEASE_S = 120.0
#: How often a task looks again for a free share when every slot is held.
_SLOT_POLL_S = 0.05
#: A gate with no call out for this long hands its shares on (:meth:`CallGate.settle`).
_IDLE_RELEASE_S = 2.0


def _log(budget: CallBudget, url: str, tasks: int, redis_url: str | None,
         lease_s: float) -> CallLog | None:
    """The shared log of a Redis budget, or the log of this process's share of a split
    budget if it holds that share's slot (None: :func:`_take_share` first)."""
    key = _log_key(budget, url, tasks, redis_url)
    with _registry_lock:
        log = _logs.get(key)
        if log is None and redis_url:
            import redis

            log = RedisCallLog(redis.Redis.from_url(redis_url),
                               f"headwater:budget:{budget.key(url)}", budget.calls,
                               budget.period_s + budget.margin_s, lease_s)
            _logs[key] = log
        return log


def _log_key(budget: CallBudget, url: str, tasks: int,
             redis_url: str | None) -> tuple[Any, ...]:
    return (budget.key(url), tasks, redis_url, budget.calls, budget.margin_s)


def _take_share(budget: CallBudget, url: str, tasks: int, lease_s: float,
                ) -> tuple[LocalCallLog | None, float]:
    """This process's share of a split budget: its log once a slot of the machine is
    held (counting the calls its previous holder made), else how long to wait."""
    key = _log_key(budget, url, tasks, None)
    share = split_share(budget, tasks)
    with _registry_lock:
        held = _shares.get(key)
        if held is None:
            slot = ShareSlot.try_take(repr(key), tasks, share)
            if slot is None:
                return None, _SLOT_POLL_S
            log = LocalCallLog(share, budget.period_s + budget.margin_s, lease_s)
            log.adopt(slot.inherited)
            held = _shares[key] = _HeldShare(slot, log)
            _logs[key] = log
        held.users += 1
        return held.log, -1.0


def _give_back(key: tuple[Any, ...]) -> None:
    """One user of this process's share is done; the last one hands the slot on."""
    with _registry_lock:
        held = _shares.get(key)
        if held is None:
            return
        held.users -= 1
        if held.users > 0:
            return
        del _shares[key]
        _logs.pop(key, None)
    held.slot.release(held.log.stamps_now())


@dataclass
class _HeldShare:
    slot: ShareSlot
    log: LocalCallLog
    users: int = 0


def _host(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class CallGate:
    """Every request passes here: pauses first, then the budgets.

    Its waits are coroutines: the client's requests run on one event loop per
    task (:mod:`._event_loop`), and a request waiting for budget must not hold up
    the others.  Local call logs are consulted on the loop (a lock and a dict);
    Redis is asked on a worker thread, so a slow Redis never blocks the loop.
    The cap on requests in flight is the client's own (``HttpSettings.concurrency``).
    """

    def __init__(self, budgets: Sequence[CallBudget], *, tasks: int,
                 redis_url: str | None = None, timeout_s: float = 30.0) -> None:
        self.budgets = tuple(budgets)
        self.tasks = max(tasks, 1)
        self.redis_url = redis_url
        self.lease_s = max(MIN_LEASE_S, 4 * timeout_s)
        self._holding: set[tuple[Any, ...]] = set()
        self._out = 0  # reservations not settled yet
        self._last_use = 0.0

    async def reserve(self, url: str) -> list[tuple[CallLog, str]]:
        """Wait until every budget ``url`` counts against allows one more call; hold them.

        Budgets are reserved in their configured order by every caller, so two
        callers never wait on each other's second budget.  A caller cancelled
        while waiting releases what it already holds.
        """
        held: list[tuple[CallLog, str]] = []
        self._out += 1
        self._last_use = time.monotonic()
        try:
            for budget in self.budgets:
                if not budget.matches(url):
                    continue
                log = await self._log(budget, url)
                token = uuid.uuid4().hex
                while (wait_s := await _off_loop(log, log.try_reserve, token)) >= 0:
                    await asyncio.sleep(wait_s)
                held.append((log, token))
        except BaseException:
            await self.settle(held)
            raise
        return held

    async def _log(self, budget: CallBudget, url: str) -> CallLog:
        """The log ``budget`` counts this gate's calls in; a split budget's share is
        taken (waiting for a free slot) on this gate's first call."""
        if self.redis_url:
            log = _log(budget, url, self.tasks, self.redis_url, self.lease_s)
            assert log is not None
            return log
        key = _log_key(budget, url, self.tasks, None)
        if key in self._holding:
            local = _logs.get(key)
            assert local is not None  # held by this gate, so still registered
            return local
        while True:
            taken, wait_s = _take_share(budget, url, self.tasks, self.lease_s)
            if taken is not None:
                self._holding.add(key)
                return taken
            await asyncio.sleep(wait_s)

    def release(self) -> None:
        """This gate makes no more calls: hand its shares on (:mod:`._share_slots`)."""
        holding, self._holding = self._holding, set()
        for key in holding:
            _give_back(key)

    async def settle(self, reservations: Sequence[tuple[CallLog, str]]) -> None:
        """The call holding ``reservations`` was answered or failed: start its windows.

        A gate with no call out for ``_IDLE_RELEASE_S`` hands its shares on, so a
        process that stopped calling (a driver that read to plan, a worker whose
        task was never told it ended) never keeps a slot from the tasks."""
        for log, token in reservations:
            await _off_loop(log, log.settle, token)
        self._out = max(self._out - 1, 0)  # a failed reserve was settled already
        if self._out == 0 and self._holding:
            asyncio.get_running_loop().call_later(_IDLE_RELEASE_S, self._release_if_idle)

    def _release_if_idle(self) -> None:
        if self._out == 0 and time.monotonic() - self._last_use >= _IDLE_RELEASE_S * 0.9:
            self.release()

    def pause_for(self, url: str, seconds: float) -> None:
        """Hold back every call to ``url``'s host in this process for ``seconds``."""
        host = _host(url)
        until = time.monotonic() + max(seconds, 0.0)
        with _registry_lock:
            _paused_until[host] = max(_paused_until.get(host, 0.0), until)

    @staticmethod
    async def wait_pause(url: str) -> None:
        """Return once no pause holds ``url``'s host (:meth:`pause_for`)."""
        if not _paused_until:
            return  # nothing paused in this process: the common case, without parsing the URL
        host = _host(url)
        while True:
            with _registry_lock:
                remaining = _paused_until.get(host, 0.0) - time.monotonic()
            if remaining <= 0:
                return
            await asyncio.sleep(min(remaining, 1.0))


async def _off_loop(log: CallLog, call: Callable[[str], T], token: str) -> T:
    """``call(token)`` at once for a local log; on a worker thread for one in Redis."""
    if isinstance(log, LocalCallLog):
        return call(token)
    return await asyncio.to_thread(call, token)
