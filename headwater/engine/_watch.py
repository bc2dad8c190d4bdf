"""Continuous mode: sync again and again, each batch of new objects committed once.

``headwater sync CONNECTION --watch`` calls :func:`watch_engine`.  Each round asks
every incremental stream for its partitions (a listing, nothing is read); when
there are none it sleeps, doubling the pause up to :data:`MAX_BACKOFF_S` (the
seed's bound of 5 s); when there are some it runs one whole sync, which plans,
commits and releases state exactly as a single sync does, so every batch is
committed exactly once and a killed watcher resumes like a killed sync.

SIGINT and SIGTERM set a flag instead of interrupting: the sync in progress
finishes its commits, then the loop ends.  A second signal is not special.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from headwater.engine._sync import SyncEngine, SyncResult
from headwater.engine.connection import resolve_streams
from headwater.errors import ConfigError

__all__ = ["MAX_BACKOFF_S", "MIN_BACKOFF_S", "has_new_data", "stop_on_signals", "watch",
           "watch_engine"]

log = logging.getLogger(__name__)

MIN_BACKOFF_S = 0.25
MAX_BACKOFF_S = 5.0


def has_new_data(engine: SyncEngine) -> bool:
    """Whether a sync now would read anything (or must finish an unfinished run)."""
    conn = engine.connection
    if engine.store.find_unfinished_run(conn.name) is not None:
        return True
    for configured in resolve_streams(engine.source, conn):
        stream = engine.source.stream(configured.name)
        if stream.partitions(engine.store.get_state(conn.name, configured.name)):
            return True
    return False


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop`` (main thread only) instead of raising mid-commit."""
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: Any) -> None:
        log.warning("%s: stopping after the sync in progress",
                    signal.Signals(signum).name)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def watch_engine(engine: SyncEngine, stop: threading.Event,
                 on_result: Callable[[SyncResult], None] = lambda result: None,
                 ) -> list[SyncResult]:
    """Watch one connection (every configured stream must be incremental)."""
    conn = engine.connection
    full = [s.name for s in resolve_streams(engine.source, conn) if not s.incremental]
    if full:
        raise ConfigError(f"--watch needs incremental streams; full refresh: {full}",
                          field="streams")
    return watch(engine.run, lambda: has_new_data(engine), stop, on_result)


def watch(run: Callable[[], SyncResult], has_new: Callable[[], bool], stop: threading.Event,
          on_result: Callable[[SyncResult], None] = lambda result: None,
          sleep: Callable[[float], Any] | None = None) -> list[SyncResult]:
    """Call ``run`` whenever ``has_new()`` until ``stop`` is set; returns every result.

    Between empty polls the pause doubles from :data:`MIN_BACKOFF_S` up to
    :data:`MAX_BACKOFF_S`; a sync resets it.  A failed sync does not end the
    loop (the next round resumes its run) but waits the longest pause first.
    """
    wait = sleep or stop.wait
    results: list[SyncResult] = []
    pause = MIN_BACKOFF_S
    while not stop.is_set():
        if has_new():
            result = run()
            results.append(result)
            on_result(result)
            pause = MIN_BACKOFF_S
            if result.status != "succeeded":
                wait(MAX_BACKOFF_S)
            continue
        wait(pause)
        pause = min(pause * 2, MAX_BACKOFF_S)
    return results
