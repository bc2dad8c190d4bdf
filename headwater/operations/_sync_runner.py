"""One sync of a connection, built in one place for ``headwater sync``, ``sync --watch``,
``replay``, ``backfill``, ``serve``'s scheduler, the web page's buttons and the JVM class
archive's training run (and Airflow, which runs ``headwater sync``).

:func:`start_engine` is the only place a run's engine is built: the source's reads
started before Spark (an option, on by default for a sync), the Spark session started
and timed as the run's ``spark_session`` step, ``spark-ready`` announced.  Before it,
only the CLI's sync did the early reads and the timing, so a sync from the page or
``serve`` was not the sync ``headwater sync`` ran, and its steps were nowhere.  Each
run records its step times with its figures (``steps_s`` in the run's stats), so what a
sync from anywhere spent is on its run page.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime
from typing import TYPE_CHECKING

from headwater.config import ConnectionConfig
from headwater.operations._settings import (
    open_store,
    shared_session_settings,
    spark_settings,
    store_url,
)
from headwater.serve import RunOutcome, RunsInProgress, last_run_started

if TYPE_CHECKING:
    from headwater.destinations import Destination
    from headwater.engine import SparkSettings, SyncEngine, SyncObserver
    from headwater.metadata_store import MetadataStore


def start_engine(config: ConnectionConfig, store: MetadataStore, *,
                 spark: SparkSettings | None = None, observer: SyncObserver | None = None,
                 early_reads: bool = True, destination: Destination | None = None,
                 ) -> SyncEngine:
    """The engine of a run of ``config``, its Spark session started: what every caller runs.

    ``early_reads``: let the source start a new run's reads while Spark starts
    (:meth:`~headwater.engine.SyncEngine.start_reads_early`; timed as the run's
    ``early_reads`` step).  For a sync; a replay or backfill plans its own
    partitions, so early reads would be read for nothing there.  ``spark``: the
    command's settings (``--master``, ``--conf``...), else the connection file's.
    The session is started here, before a caller installs its signal handlers
    (a new SparkContext replaces SIGINT's) and with what the destination needs.
    ``destination``: one built already (the destination kit's), in place of the
    connection file's.
    """
    from headwater._events import emit
    from headwater.engine import SyncEngine, SyncOptions, get_spark

    engine = SyncEngine(config, store, SyncOptions(spark=spark or spark_settings(config)),
                        observer, destination=destination)
    if early_reads:
        with engine.steps.step("early_reads"):
            engine.start_reads_early()
    with engine.steps.step("spark_session"):
        get_spark(engine.options.spark)
    emit("spark-ready")
    return engine


def run_sync(config: ConnectionConfig, runs: RunsInProgress | None = None, *,
             on_engine: Callable[[SyncEngine], None] | None = None) -> RunOutcome:
    """One real sync of ``config``, as ``headwater sync`` runs it (:func:`start_engine`,
    then :meth:`~headwater.engine.SyncEngine.sync`): an unfinished run of the connection
    is finished first, then a new run syncs what is new (the outcome is the last run's,
    naming the resumed one in ``resumed_run_id``).  ``serve``'s runner and the page's
    "sync now".

    With ``runs``, the engine is registered there while it runs, so that a
    stop requested on ``runs`` reaches it (a stop during a resumed run also
    keeps the new one from starting); a run whose turn comes after that stop
    is not started at all (``skipped``).  ``on_engine`` sees the engine before
    it syncs (the web page keeps it to stop this one run).
    """
    if runs is not None and runs.stop_reason is not None:
        return RunOutcome("skipped", error=f"not started: serve is stopping "
                                           f"({runs.stop_reason})")
    store = open_store(store_url(config))
    try:
        engine = start_engine(config, store, spark=shared_session_settings(config))
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
    url = store_url(config, create=False)
    probe = open_store(url, create=False)
    if probe.missing:  # never synced (or a wrong path): no run, and no store made here
        return None
    probe.close()
    store = open_store(url)
    try:
        return last_run_started(store, config.name)
    finally:
        store.close()
