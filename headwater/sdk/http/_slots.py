"""The requests in flight of one client, with calls that lead to more calls first.

A substream's calls come from its parent's pages: each parent page starts a
child call per record.  Behind one FIFO queue, a parent window's next page
waits behind every child call queued before it (on the benchmark's API, about
a hundred), so the window's children arrive late, the queue runs dry between
windows and the last window's pages are read at the very end, with few calls
left to overlap them (``bench/substream_api_vs_cdk.py``: parent pages left in
bursts, in-flight dipping to zero between them).  Here a child call is
*deferred* (:meth:`Slots.defer`): any other call (a parent's page, a plain
window) takes the next free slot before it; each class keeps its own order.

Not a rate limit: the budgets (:mod:`._rate_limit`) are applied after a slot
is taken, to every call alike.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["Slots"]

T = TypeVar("T")

#: Whether the calls made in this context (a child call's task) wait behind the others.
_DEFERRED: contextvars.ContextVar[bool] = contextvars.ContextVar("headwater_http_deferred",
                                                                 default=False)

#: Deferred calls admitted to prepare their requests, per slot (see :meth:`Slots.defer`).
ADMITTED_PER_SLOT = 2


class Slots:
    """At most ``size`` holders at once; deferred waiters are served after the others."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._free = size
        self._waiting = 0
        self._waiting_first = 0
        self._first: deque[asyncio.Future[None]] = deque()
        self._deferred: deque[asyncio.Future[None]] = deque()
        self._admission = asyncio.Semaphore(ADMITTED_PER_SLOT * size)
        self._not_admitted = 0

    def defer(self, coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Start ``coroutine`` as a task on the running loop whose calls yield free slots
        to every call that is not deferred (a child call, behind its parent's pages).

        The mark lives in the task's own copy of the context, so it never leaks
        into the code that started it.  The task waits its turn (in the order
        the tasks were started) before it runs at all: at most
        :data:`ADMITTED_PER_SLOT` per slot run at once, so a parent page of
        fifty records does not have fifty requests built, and the loop's
        time spent, long before a slot can take them.
        """
        context = contextvars.copy_context()
        context.run(_DEFERRED.set, True)
        self._not_admitted += 1
        return asyncio.get_running_loop().create_task(self._admitted(coroutine),
                                                      context=context)

    async def _admitted(self, coroutine: Coroutine[Any, Any, T]) -> T:
        try:
            await self._admission.acquire()
        except BaseException:
            coroutine.close()
            raise
        finally:
            self._not_admitted -= 1
        try:
            return await coroutine
        finally:
            self._admission.release()

    def locked(self) -> bool:
        """Whether a call made now would wait (no free slot, or others waiting first)."""
        return self._free == 0 or self._waiting > 0

    def waiting(self) -> int:
        """Calls waiting for a slot, deferred ones not yet admitted included."""
        return self._waiting + self._not_admitted

    def waiting_first(self) -> int:
        """Calls not deferred waiting for a slot."""
        return self._waiting_first

    def held(self) -> int:
        """Slots taken now."""
        return self.size - self._free

    async def acquire(self) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        future = asyncio.get_running_loop().create_future()
        first = not _DEFERRED.get()
        (self._first if first else self._deferred).append(future)
        self._waiting += 1
        self._waiting_first += first
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # the slot was handed over just as we were cancelled
            else:
                self._waiting -= 1  # left in its queue, done: release() passes it by
                self._waiting_first -= first
            raise

    def release(self) -> None:
        """Hand the slot to the next waiter (deferred ones last), or free it."""
        for queue in (self._first, self._deferred):
            while queue:
                future = queue.popleft()
                if not future.done():
                    future.set_result(None)  # the slot passes on, still taken
                    self._waiting -= 1
                    self._waiting_first -= queue is self._first
                    return
        self._free += 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()
