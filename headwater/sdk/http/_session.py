"""The client (and its event loop) a stream keeps for every partition one task reads.

A task reads its partitions one after another.  Opening a client per partition
cost every partition a new connection per request in flight (a TCP handshake,
and on a real API a TLS handshake, each) and a new event loop; at 64 pages a
partition and 32 in flight that was one new connection for every two pages.
A :class:`ReadSession` lives as long as the stream object that made it: on an
executor that is the task (Spark unpickles the stream once per task), so
connections are reused across the task's partitions and closed when the task
lets go of the stream.  Sessions are never pickled.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from headwater.sdk.http._client import HttpClient, HttpSettings

__all__ = ["ReadSession", "SessionCache"]

T = TypeVar("T")
R = TypeVar("R")


class ReadSession:
    """One :class:`HttpClient`, whose loop runs a partition's API calls side by side,
    and the calls of the partition read next, started early (:meth:`read_ahead`)."""

    def __init__(self, settings: HttpSettings, *, tasks: int, name: str) -> None:
        self.client = HttpClient(settings, tasks=tasks, name=name)
        self._ahead: dict[str, list[Future[Any]]] = {}

    def start(self, fn: Callable[[T], Coroutine[Any, Any, R]],
              items: Iterable[T]) -> list[Future[R]]:
        """``fn`` over ``items``, all started at once on the client's loop.

        The client's concurrency caps how many requests are in flight; the rest
        wait their turn in the order they were started.
        """
        return [self.client.submit(fn(item)) for item in items]

    def read_ahead(self, key: str, fn: Callable[[T], Coroutine[Any, Any, R]],
                   items: Iterable[T]) -> None:
        """:meth:`start` now, for :meth:`take` of ``key`` later.

        Started after the calls of the partition being read, these fill the
        slots its last calls leave free, instead of waiting for the task to ask.
        One read-ahead at a time: one never taken is cancelled.
        """
        self._cancel_ahead()
        self._ahead[key] = self.start(fn, items)

    def take(self, key: str) -> list[Future[Any]] | None:
        """The calls :meth:`read_ahead` started for ``key``, if it did."""
        return self._ahead.pop(key, None)

    @staticmethod
    def results(futures: Sequence[Future[R]]) -> Iterator[R]:
        """The results of ``futures`` in order.

        Leaving early (an error, a consumer that stops) cancels the calls still
        running, so the next partition does not queue behind them.
        """
        try:
            for future in futures:
                yield future.result()
        finally:
            for future in futures:
                future.cancel()

    def _cancel_ahead(self) -> None:
        for futures in self._ahead.values():
            for future in futures:
                future.cancel()
        self._ahead.clear()

    def close(self) -> None:
        self._cancel_ahead()
        self.client.close()


class SessionCache:
    """The sessions of one stream object, by task count; closed when it is collected."""

    def __init__(self, owner: object) -> None:
        self._sessions: dict[int, ReadSession] = {}
        weakref.finalize(owner, _close_all, self._sessions)

    def close(self) -> None:
        """Close every session now, rather than when the owner is collected."""
        _close_all(self._sessions)

    def get(self, settings: HttpSettings, *, tasks: int, name: str) -> ReadSession:
        session = self._sessions.get(tasks)
        if session is None:
            session = self._sessions[tasks] = ReadSession(settings, tasks=tasks, name=name)
        return session


def _close_all(sessions: dict[int, ReadSession]) -> None:
    for session in sessions.values():
        session.close()
    sessions.clear()
