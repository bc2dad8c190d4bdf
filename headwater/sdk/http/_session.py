"""The client and threads a stream keeps for every partition one task reads.

A task reads its partitions one after another.  Opening a client per partition
cost every partition a new connection per request in flight (a TCP handshake,
and on a real API a TLS handshake, each) and new threads; at 64 pages a
partition and 32 in flight that was one new connection for every two pages.
A :class:`ReadSession` lives as long as the stream object that made it: on an
executor that is the task (Spark unpickles the stream once per task), so
connections and threads are reused across the task's partitions and closed
when the task lets go of the stream.  Sessions are never pickled.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from headwater.sdk.http._client import HttpClient, HttpSettings

__all__ = ["ReadSession", "SessionCache"]

T = TypeVar("T")
R = TypeVar("R")


class ReadSession:
    """One :class:`HttpClient` and a pool of ``client.concurrency`` threads."""

    def __init__(self, settings: HttpSettings, *, tasks: int, name: str) -> None:
        self.client = HttpClient(settings, tasks=tasks)
        self._pool = ThreadPoolExecutor(max_workers=self.client.concurrency,
                                        thread_name_prefix=f"hw-http-{name}")

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn`` over ``items`` on the threads, results in order.

        Leaving early (an error, a consumer that stops) cancels the calls not
        started yet, so the next partition does not queue behind them.
        """
        results = self._pool.map(fn, items)
        try:
            yield from results
        finally:
            results.close()  # type: ignore[attr-defined]  # a generator: cancels the rest

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()


class SessionCache:
    """The sessions of one stream object, by task count; closed when it is collected."""

    def __init__(self, owner: object) -> None:
        self._sessions: dict[int, ReadSession] = {}
        weakref.finalize(owner, _close_all, self._sessions)

    def get(self, settings: HttpSettings, *, tasks: int, name: str) -> ReadSession:
        session = self._sessions.get(tasks)
        if session is None:
            session = self._sessions[tasks] = ReadSession(settings, tasks=tasks, name=name)
        return session


def _close_all(sessions: dict[int, ReadSession]) -> None:
    for session in sessions.values():
        session.close()
    sessions.clear()
