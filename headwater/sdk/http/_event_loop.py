"""One asyncio event loop on a thread of its own, driven from ordinary threads.

A Spark task's thread is synchronous: it pulls records from a generator.  The
HTTP client's requests run as coroutines on this loop instead of one thread per
request in flight: at 16-32 requests in flight, httpx's threaded client cost
1.6-2.0 ms of CPU per page, httpx on aiohttp's transport on one loop 1.0 ms
(``bench/http_transports.py``).  The task's thread hands coroutines over
(:meth:`submit`, :meth:`run`) and takes their results in the order it asks
for them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["EventLoopThread"]

T = TypeVar("T")


class EventLoopThread:
    """A running event loop and its daemon thread; :meth:`close` stops both."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def in_loop(self) -> bool:
        """True on the loop's own thread, where blocking on a coroutine would deadlock."""
        return threading.current_thread() is self._thread

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedule ``coroutine`` on the loop; cancelling the future cancels it."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop and wait for its result (from another thread)."""
        if self.in_loop():
            coroutine.close()
            raise RuntimeError("a blocking HTTP call was made on the client's own event loop; "
                               "use the client's async methods there")
        return self.submit(coroutine).result()

    def iterate(self, generator: AsyncIterator[T]) -> Iterator[T]:
        """The items of an async generator, each fetched on the loop when asked for."""
        try:
            while True:
                try:
                    yield self.run(_anext(generator))
                except StopAsyncIteration:
                    return
        finally:
            aclose = getattr(generator, "aclose", None)
            if aclose is not None and self.loop.is_running():
                self.run(aclose())

    def close(self) -> None:
        """Stop the loop and its thread; from the loop's own thread, only ask it to stop."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self.in_loop():
            return
        self._thread.join()
        self.loop.close()


async def _anext(generator: AsyncIterator[T]) -> T:
    return await generator.__anext__()
