"""``headwater serve DIR``: run every connection of a folder on its ``schedule``.

The scheduling rules (overlaps, retries, catch-up, reloading files, stopping)
are :class:`headwater.serve.Scheduler`'s; this module wires it to real syncs
and to the process's signals.  SIGTERM or SIGINT stop it: no new run starts,
runs in progress commit, then the process exits 0.
"""

from __future__ import annotations

import signal
import threading
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from headwater.cli import _options as opt
from headwater.config import ConnectionConfig
from headwater.serve import RunOutcome, ScheduleEvent, Scheduler, last_run_started


def sync_runner(config: ConnectionConfig) -> RunOutcome:
    """One real sync of ``config``, as ``headwater sync`` runs it."""
    from headwater.cli import app as cli
    from headwater.cli._rerun import spark_settings
    from headwater.engine import SyncEngine, SyncOptions

    store = cli._open_store(cli.store_url(config))
    try:
        result = SyncEngine(config, store, SyncOptions(spark=spark_settings(config))).run()
    finally:
        store.close()
    failed = [f"{s.name}: {s.error}" for s in result.streams if s.status != "succeeded"]
    return RunOutcome(result.status, run_id=result.run_id, error="; ".join(failed) or None)


def store_last_started(config: ConnectionConfig) -> datetime | None:
    from headwater.cli import app as cli
    store = cli._open_store(cli.store_url(config))
    try:
        return last_run_started(store, config.name)
    finally:
        store.close()


def serve(
    folder: Annotated[Path, typer.Argument(help="Folder of connection files.", metavar="DIR",
                                           exists=True, file_okay=False)],
    max_parallel: Annotated[int, typer.Option(help="Most runs at once (of different "
                                              "connections).")] = 4,
    poll: Annotated[float, typer.Option(help="Seconds between two looks at the folder "
                                        "and the clock.")] = 1.0,
    verbose: opt.VerboseOpt = 0,
) -> None:
    """Run every connection in DIR on its `schedule:` until SIGTERM (see the docs for the rules)."""
    from headwater.cli import app as cli
    cli._setup_logging(max(verbose, 1), as_json=False)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        cli.err.print(f"[yellow]{signal.Signals(signum).name}: stopping after the runs in "
                      "progress commit[/]")
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def on_event(event: ScheduleEvent) -> None:
        cli.err.print(f"{event.at:%Y-%m-%dT%H:%M:%S} {event.connection} {event.what} "
                      f"{event.detail}".rstrip(), highlight=False, markup=False)

    with cli._handled(False):
        scheduler = Scheduler(folder=folder, runner=sync_runner, last_started=store_last_started,
                              max_parallel=max_parallel, poll_s=poll, on_event=on_event)
        cli.err.print(f"serving {folder.resolve()} (SIGTERM or Ctrl-C stops)", highlight=False)
        scheduler.run(stop)
        cli.err.print("stopped: every run in progress has finished", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(serve)
