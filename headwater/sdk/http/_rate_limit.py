"""Call budgets that hold for a whole sync, however many executors run it.

A :class:`CallBudget` says "at most ``calls`` requests in any moving window of
``period_s`` seconds" for the calls to one host whose path matches a pattern
(seed 000's ``MovingWindowCallRatePolicy``).  Two ways to hold it across a
cluster:

* **Split (default).**  The engine tells the stream at plan time how many
  Spark tasks run at once (``tasks``); each Python worker process gets
  ``calls // tasks`` of the budget.  A worker runs one task at a time and
  Spark reuses workers, so at most ``tasks`` shares are ever spent at once and
  their sum never exceeds the budget.  The limiter lives at module level so a
  share outlives one task: the next task on the same worker continues its
  window instead of starting a fresh one.
* **Redis.**  With ``redis_url`` set, every process uses pyrate-limiter's
  Redis bucket under one key, so the whole budget is shared exactly (and
  nothing is lost to uneven splitting).

A safety margin (``margin_s``, default 0.25 s) is added to the window: the
server sees a call slightly after the client counted it (network, scheduling on
both sides), and without the margin two calls counted exactly one window apart
could arrive inside one window.  Raise it on a slow or congested path.

``Retry-After`` and ``X-RateLimit-Remaining: 0`` responses pause every thread of
the process that calls the same host (:meth:`CallGate.pause_for`).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from headwater.errors import ConfigError

__all__ = ["CallBudget", "CallGate", "split_share"]

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
        """The bucket this call counts against: host and pattern."""
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}|{self.path_pattern or '*'}|{self.period_s}"



def split_share(budget: CallBudget, tasks: int) -> int:
    """The calls one of ``tasks`` concurrent tasks may make per window."""
    share = budget.calls // max(tasks, 1)
    if share < 1:
        raise ConfigError(
            f"a budget of {budget.calls} calls per {budget.period_s:g} s cannot be split across "
            f"{tasks} concurrently running tasks; configure rate_limit.redis_url to share one "
            "budget exactly, or run with fewer executor cores", field="rate_limit")
    return share


# Process-wide limiters, semaphores and pauses, keyed by what they guard.  The
# lock makes sure two threads of one task never create two limiters for one key
# (which would double the share).
_registry_lock = threading.Lock()
_limiters: dict[tuple[Any, ...], Any] = {}
_semaphores: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_paused_until: dict[str, float] = {}


def _limiter(budget: CallBudget, url: str, tasks: int, redis_url: str | None) -> Any:
    from pyrate_limiter import InMemoryBucket, Limiter, Rate, RedisBucket

    key = (budget.key(url), tasks, redis_url, budget.calls, budget.margin_s)
    with _registry_lock:
        limiter = _limiters.get(key)
        if limiter is None:
            window_ms = int((budget.period_s + budget.margin_s) * 1000)
            if redis_url:
                import redis

                client = redis.Redis.from_url(redis_url)
                bucket: Any = RedisBucket.init([Rate(budget.calls, window_ms)], client,
                                               f"headwater:budget:{budget.key(url)}")
            else:
                bucket = InMemoryBucket([Rate(split_share(budget, tasks), window_ms)])
            limiter = Limiter(bucket)
            _limiters[key] = limiter
        return limiter


def _host(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class CallGate:
    """Every request passes here: the in-flight cap, pauses, then the budgets.

    ``concurrency`` caps requests in flight in this process (the task's share of
    the stream's concurrency setting).  Picklable: it holds plain values and
    looks up the process-wide limiters when used.
    """

    def __init__(self, budgets: Sequence[CallBudget], *, tasks: int, concurrency: int,
                 redis_url: str | None = None) -> None:
        self.budgets = tuple(budgets)
        self.tasks = max(tasks, 1)
        self.concurrency = max(concurrency, 1)
        self.redis_url = redis_url

    @contextmanager
    def call(self, url: str) -> Iterator[None]:
        """Wait out any pause for ``url``'s host, and hold an in-flight slot meanwhile.

        The budget itself is spent by :meth:`spend`, as late as possible (just
        before the request goes out), so the time between counting a call and
        the server seeing it stays small.
        """
        host = _host(url)
        with _registry_lock:
            semaphore = _semaphores.setdefault(
                (host, self.concurrency), threading.BoundedSemaphore(self.concurrency))
        with semaphore:
            self._wait_pause(host)
            yield

    def spend(self, url: str) -> None:
        """Block until every budget ``url`` counts against allows one more call, and take it."""
        for budget in self.budgets:
            if budget.matches(url):
                _limiter(budget, url, self.tasks, self.redis_url).try_acquire(
                    "call", blocking=True)

    def pause_for(self, url: str, seconds: float) -> None:
        """Hold back every call to ``url``'s host in this process for ``seconds``."""
        host = _host(url)
        until = time.monotonic() + max(seconds, 0.0)
        with _registry_lock:
            _paused_until[host] = max(_paused_until.get(host, 0.0), until)

    @staticmethod
    def _wait_pause(host: str) -> None:
        while True:
            with _registry_lock:
                remaining = _paused_until.get(host, 0.0) - time.monotonic()
            if remaining <= 0:
                return
            time.sleep(min(remaining, 1.0))
