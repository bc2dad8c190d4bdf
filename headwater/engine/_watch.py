"""Continuous mode: sync again and again, each batch of new objects committed once.

``headwater sync CONNECTION --watch`` calls :func:`watch_engine`.  Each round asks
every incremental stream for its partitions (a listing, nothing is read); when
there are none it sleeps, doubling the pause up to :data:`MAX_BACKOFF_S` (the
seed's bound of 5 s); when there are some it runs one whole sync, which plans,
commits and releases state exactly as a single sync does, so every batch is
committed exactly once and a killed watcher resumes like a killed sync.

The loop ends when the engine is asked to stop
(:meth:`~headwater.engine.SyncEngine.request_stop`, which the CLI calls on
SIGINT/SIGTERM): a sync in progress then ends after the commits in flight,
``stopped``, and the next sync continues it; an idle watcher simply returns.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from headwater.engine._results import SyncResult
from headwater.engine._sync import SyncEngine
from headwater.engine.connection import resolve_streams
from headwater.errors import ConfigError

__all__ = ["MAX_BACKOFF_S", "MIN_BACKOFF_S", "has_new_data", "watch", "watch_engine"]

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


def watch_engine(engine: SyncEngine,
                 on_result: Callable[[SyncResult], None] = lambda result: None,
                 ) -> list[SyncResult]:
    """Watch one connection (every configured stream must be incremental) until
    ``engine.request_stop()``; the last result is ``stopped`` if that cut a sync short."""
    conn = engine.connection
    full = [s.name for s in resolve_streams(engine.source, conn) if not s.incremental]
    if full:
        raise ConfigError(f"--watch needs incremental streams; full refresh: {full}",
                          field="streams")
    return watch(engine.run, lambda: has_new_data(engine), engine.stopping, on_result)


def watch(run: Callable[[], SyncResult], has_new: Callable[[], bool], stop: threading.Event,
          on_result: Callable[[SyncResult], None] = lambda result: None,
          sleep: Callable[[float], Any] | None = None) -> list[SyncResult]:
    """Call ``run`` whenever ``has_new()`` until ``stop`` is set; returns every result.

    Between empty polls the pause doubles from :data:`MIN_BACKOFF_S` up to
    :data:`MAX_BACKOFF_S`; a sync resets it.  A failed sync does not end the
    loop (the next round plans what it left) but waits the longest pause
    first.  ``stop`` is looked at between syncs; ``run`` itself must watch it
    to end a sync early (the engine does).
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
            if result.status == "failed" or result.exit_code is not None:
                # A stopped run whose commit could not be checked is resumed next round
                # (it is unfinished): after the same pause, not at once.
                wait(MAX_BACKOFF_S)
            continue
        wait(pause)
        pause = min(pause * 2, MAX_BACKOFF_S)
    return results
