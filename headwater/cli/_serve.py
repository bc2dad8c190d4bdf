"""``headwater serve DIR``: run every connection of a folder on its ``schedule``.

The scheduling rules (overlaps, retries, catch-up, reloading files, stopping)
are :class:`headwater.serve.Scheduler`'s; this module wires it to real syncs
and to the process's signals, as :mod:`headwater.cli._stop` does for ``sync``:

* the first SIGTERM or SIGINT starts no new run and asks every run in
  progress to stop after its commits in flight
  (:meth:`~headwater.engine.SyncEngine.request_stop`, through
  :class:`~headwater.serve.RunsInProgress`); once they have ended (each
  ``stopped``, or finished if it had nothing left to start) the process exits
  0.  A stopped run is resumed by the next sync of its connection: the next
  firing under ``serve`` (which then goes on with a new run for what is new,
  as ``headwater sync`` does), or a ``headwater sync`` by hand.  So a service
  manager's SIGTERM ends ``serve`` within about one checkpoint's commit.
* a second one aborts at once, leaving the runs in progress ``running``, as
  a killed sync does (the next sync resumes them the same way): SIGTERM falls
  to its default action and ends the process; SIGINT, whose default is a
  :class:`KeyboardInterrupt`, ends it with exit code 130 without waiting for
  the run threads.

The syncs run on the scheduler's threads, so their SparkContext is created
off the main thread and PySpark leaves the SIGINT handler alone: the
handlers :func:`~headwater.cli._stop.stop_on_signals` installs hold for the
whole life of ``serve``.  Send SIGTERM to this process only (``kill PID``;
systemd ``KillMode=mixed``): Spark's JVM does not survive one of its own.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from headwater import operations
from headwater.cli import _common as opt
from headwater.cli._stop import STOPPED_EXIT_CODE, stop_on_signals
from headwater.cli._ui import HostOpt, PortOpt, TokenOpt, start_page
from headwater.config import mask
from headwater.errors import ConfigError
from headwater.operations import run_sync, store_last_started
from headwater.serve import HealthWatch, RunsInProgress, ScheduleEvent, Scheduler
from headwater.ui import DEFAULT_PORT


def serve_until_signalled(scheduler: Scheduler, runs: RunsInProgress,
                          on_stop: Callable[[str], None] = lambda reason: None) -> None:
    """Run ``scheduler`` in this thread until SIGTERM/SIGINT, then stop it and its runs.

    The first signal calls ``on_stop(reason)``, ends the scheduler's loop and
    asks ``runs`` to stop; this returns once every run in progress has ended.
    A second SIGINT raises :class:`KeyboardInterrupt` from here at once (the
    runs go on, on their threads: the caller ends the process); a second
    SIGTERM ends the process.  Main thread only, like
    :func:`~headwater.cli._stop.stop_on_signals`: elsewhere no signal is
    caught and this runs until the process ends.
    """
    stop = threading.Event()

    def request_stop(reason: str) -> None:
        on_stop(reason)
        stop.set()
        runs.request_stop(reason)

    with stop_on_signals(request_stop):
        scheduler.run(stop)


def serve(
    folder: Annotated[Path, typer.Argument(help="Folder of connection files.", metavar="DIR",
                                           exists=True, file_okay=False)],
    max_parallel: Annotated[int, typer.Option(help="Most runs at once (of different "
                                              "connections).")] = 4,
    poll: Annotated[float, typer.Option(help="Seconds between two looks at the folder "
                                        "and the clock.")] = 1.0,
    ui: Annotated[bool, typer.Option("--ui", help="Serve the web page too (`headwater ui`), "
                                     "in this process.")] = False,
    host: HostOpt = "127.0.0.1",
    port: PortOpt = DEFAULT_PORT,
    token: TokenOpt = None,
    metrics: Annotated[str | None, typer.Option(
        metavar="HOST:PORT",
        help="Serve Prometheus metrics at http://HOST:PORT/metrics (a bare PORT listens on "
             "127.0.0.1).")] = None,
    metrics_store: Annotated[str | None, typer.Option(
        metavar="URL",
        help="Metadata store whose runs the metrics count (default: the one `headwater runs` "
             "reads).")] = None,
    verbose: opt.VerboseOpt = 0,
) -> None:
    """Run every connection in DIR on its `schedule:` until SIGTERM (see the docs for the rules).

    SIGTERM or Ctrl-C starts no new run and stops the runs in progress after
    their commits in flight (the next sync resumes them), then exits 0; a
    second one aborts at once.
    """
    from headwater.cli import _common as cli
    cli.setup_logging(max(verbose, 1), as_json=False)

    def on_event(event: ScheduleEvent) -> None:
        cli.err.print(f"{event.at:%Y-%m-%dT%H:%M:%S} {event.connection} {event.what} "
                      f"{event.detail}".rstrip(), highlight=False, markup=False)

    def on_stop(reason: str) -> None:
        cli.err.print(f"[yellow]{mask(reason)}: no new run starts; the runs in progress stop "
                      "after their commits in flight and the next sync resumes them[/]")

    with cli.handled(False):
        runs = RunsInProgress()
        watch = HealthWatch()  # `when: late` / `when: stale` hooks, once per change
        scheduler = Scheduler(folder=folder, runner=partial(run_sync, runs=runs),
                              last_started=store_last_started, max_parallel=max_parallel,
                              poll_s=poll, on_event=on_event, on_tick=watch.on_tick)
        page = start_page(folder, host, port, token, None, runs, scheduler) if ui else None
        with closing(watch), metrics_server(metrics, metrics_store, scheduler, watch):
            cli.err.print(f"serving {folder.resolve()} (SIGTERM or Ctrl-C stops)",
                          highlight=False)
            try:
                serve_until_signalled(scheduler, runs, on_stop)
            except KeyboardInterrupt:
                # The run threads are not daemons: a normal exit would wait for them.
                cli.err.print("[red]aborted:[/] the runs in progress are left unfinished; the "
                              "next sync of each connection resumes its run")
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(STOPPED_EXIT_CODE)
            if page is not None:
                page.shutdown(runs.stop_reason or "stopping")  # the page's syncs, stopped too
        cli.err.print("stopped: every run in progress has ended", highlight=False)


@contextmanager
def metrics_server(address: str | None, store_url: str | None,
                   scheduler: Scheduler, watch: HealthWatch | None = None) -> Iterator[None]:
    """``serve --metrics``: ``/metrics`` over the metadata store and ``scheduler``, while
    the block runs (nothing when ``address`` is ``None``).

    The store is the one ``headwater runs`` reads (``--metrics-store``, else
    ``HEADWATER_METADATA_STORE``, else the home folder's): the metrics count every
    run recorded there, also syncs run by hand, and connections whose files name
    another store are reported by the scheduler's figures only.
    """
    if address is None:
        yield
        return
    from headwater._listen import listen_address
    from headwater.cli import _common as cli
    from headwater.observability.metrics import HeadwaterCollector, MetricsServer

    try:
        host, port = listen_address(address)
    except ValueError as exc:
        raise ConfigError(str(exc), field="--metrics") from exc
    # To read only: a missing store is reported down, never created empty.
    store = operations.open_store(operations.store_url(explicit=store_url, create=False),
                                  create=False)
    try:
        try:
            server = MetricsServer(host, port, HeadwaterCollector(
                store, scheduler, connections=watch.healths if watch is not None else None))
        except OSError as exc:
            raise ConfigError(f"--metrics cannot listen on {address}: {exc.strerror or exc}",
                              field="--metrics") from exc
        cli.err.print(f"metrics at {server.url} (runs of {store.url})", highlight=False)
        try:
            yield
        finally:
            server.close()
    finally:
        store.close()


def register(app: typer.Typer) -> None:
    app.command()(serve)
