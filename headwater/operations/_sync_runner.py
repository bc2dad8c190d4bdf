"""One sync of a connection as ``headwater sync`` runs it, for ``serve``'s scheduler
and for the web page's "sync now": the same code, so a sync started from the page
is exactly a CLI sync."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime
from typing import TYPE_CHECKING

from headwater.config import ConnectionConfig
from headwater.operations._settings import open_store, spark_settings, store_url
from headwater.serve import RunOutcome, RunsInProgress, last_run_started

if TYPE_CHECKING:
    from headwater.engine import SyncEngine


def sync_runner(config: ConnectionConfig, runs: RunsInProgress | None = None, *,
                on_engine: Callable[[SyncEngine], None] | None = None) -> RunOutcome:
    """One real sync of ``config``, as ``headwater sync`` runs it: an unfinished run of
    the connection is finished first, then a new run syncs what is new (the outcome
    is the last run's, naming the resumed one in ``resumed_run_id``).

    With ``runs``, the engine is registered there while it runs, so that a
    stop requested on ``runs`` reaches it (a stop during a resumed run also
    keeps the new one from starting); a run whose turn comes after that stop
    is not started at all (``skipped``).  ``on_engine`` sees the engine before
    it syncs (the web page keeps it to stop this one run).
    """
    from headwater.engine import SyncEngine, SyncOptions

    if runs is not None and runs.stop_reason is not None:
        return RunOutcome("skipped", error=f"not started: serve is stopping "
                                           f"({runs.stop_reason})")
    store = open_store(store_url(config))
    try:
        engine = SyncEngine(config, store, SyncOptions(spark=spark_settings(config)))
        if on_engine is not None:
            on_engine(engine)
        with runs.running(engine) if runs is not None else nullcontext():
            results = engine.sync()
    finally:
        store.close()
    result = results[-1]
    resumed = results[0].run_id if len(results) > 1 else None
    if result.status == "stopped":
        # ``exit_code``: stopped because a commit's outcome is unknown, not on request.
        return RunOutcome("stopped", run_id=result.run_id, error=result.stop_reason,
                          resumed_run_id=resumed, retry=result.exit_code is not None)
    failed = [f"{s.name}: {s.error or '; '.join(s.warnings)}" for s in result.streams
              if s.status != "succeeded"]
    return RunOutcome(result.status, run_id=result.run_id, error="; ".join(failed) or None,
                      resumed_run_id=resumed)


def store_last_started(config: ConnectionConfig) -> datetime | None:
    """When ``config``'s connection last started a run, from its store (the catch-up rule)."""
    store = open_store(store_url(config))
    try:
        return last_run_started(store, config.name)
    finally:
        store.close()
