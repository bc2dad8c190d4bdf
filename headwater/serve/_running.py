"""The runs ``headwater serve`` has in progress, so that one signal asks each of them to stop.

The scheduler runs each sync on a thread of its pool; the engine of a run
exists only inside that thread.  :class:`RunsInProgress` is where the threads
put their engines while they run, and where a SIGTERM reaches them:
:meth:`RunsInProgress.request_stop` calls
:meth:`~headwater.engine.SyncEngine.request_stop` on every engine running,
and on every engine that starts running afterwards (a run the scheduler
submitted just before the signal), so no run started before the stop goes on
reading after it.

Example (what ``headwater serve`` does)::

    runs = RunsInProgress()

    def runner(config):              # on a scheduler thread
        engine = SyncEngine(config, store)
        with runs.running(engine):
            return engine.sync()

    runs.request_stop("SIGTERM received")   # from the signal's helper thread
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Stoppable(Protocol):
    """What a run needs to offer to be stopped: :meth:`SyncEngine.request_stop`'s shape."""

    def request_stop(self, reason: str = ...) -> None:
        """Stop after the commits in flight; callable from any thread, more than once."""


class RunsInProgress:
    """The engines running now; a stop requested here reaches each of them, and later ones.

    Thread-safe: engines come and go on the scheduler's threads while the stop
    comes from another.  The lock only guards the list and the reason; the
    engines' ``request_stop`` is called outside it (it may log, and must not
    wait on a run thread that is itself waiting for this lock).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engines: list[Stoppable] = []
        self._reason: str | None = None

    @property
    def stop_reason(self) -> str | None:
        """Why a stop was requested (``None``: it was not); it never resets."""
        with self._lock:
            return self._reason

    @contextmanager
    def running(self, engine: Stoppable) -> Iterator[None]:
        """``engine`` runs within the block; stopped on entry if the stop came already."""
        with self._lock:
            self._engines.append(engine)
            reason = self._reason
        if reason is not None:
            engine.request_stop(reason)
        try:
            yield
        finally:
            with self._lock:
                self._engines.remove(engine)

    def request_stop(self, reason: str) -> None:
        """Ask every run in progress, and every one that starts from now on, to stop.

        The first reason is the one kept; calling again asks the engines again
        (harmless: a stop request is idempotent).
        """
        with self._lock:
            if self._reason is None:
                self._reason = reason
            reason = self._reason
            engines = list(self._engines)
        for engine in engines:
            engine.request_stop(reason)


__all__ = ["RunsInProgress", "Stoppable"]
