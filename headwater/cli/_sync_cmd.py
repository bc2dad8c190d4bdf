"""``headwater sync``: read a connection's streams on Spark and commit them exactly once."""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Annotated

import typer

from headwater.cli import _common as cli
from headwater.cli._common import ConfOpt, ConnectionArg, JsonOpt, MasterOpt, RemoteOpt, VerboseOpt
from headwater.config import load_connection
from headwater.errors import ConfigError
from headwater.operations import open_store, spark_settings, start_engine, store_url


def sync(
    connection: ConnectionArg,
    as_json: JsonOpt = False,
    master: MasterOpt = None,
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    verbose: VerboseOpt = 0,
    watch: Annotated[bool, typer.Option(
        "--watch", help="Keep syncing new data (back off up to 5 s when there is none) until "
                        "Ctrl-C/SIGTERM; with --json, one JSON line per sync.")] = False,
    one_run: Annotated[bool, typer.Option(
        "--one-run", help="Run one run only: finish an unfinished run (a killed or stopped "
                          "sync's) and stop there, new data waiting for the next sync; with "
                          "none unfinished, sync as usual.")] = False,
) -> None:
    """Sync a connection: read its streams on Spark and commit them exactly once.

    A run a killed or stopped sync left unfinished is finished first (same
    plan), then a new run syncs everything since, in the same command; both
    are in the summary and in --json (the top level is the newest run's,
    `runs` lists every run).  SIGINT (Ctrl-C) or SIGTERM stops it after the
    commits in progress (exit code 130, the next sync continues the run, and
    no new run starts); a second one aborts at once.
    """
    from headwater._events import emit
    from headwater.cli._leave import done as leave_when_done
    from headwater.cli._render import ProgressObserver, print_result
    from headwater.cli._stop import stop_on_signals, sync_exit_code
    from headwater.engine._results import sync_document
    from headwater.engine._steps import seconds_since_process_start

    started = seconds_since_process_start()  # the interpreter's start and the imports
    setting_up = time.perf_counter()
    cli.setup_logging(verbose, as_json)
    with cli.handled(as_json):
        if one_run and watch:
            raise ConfigError("--one-run and --watch: --watch runs one run per round "
                              "already; choose one", field="--one-run")
        config = load_connection(connection)
        settings = spark_settings(config, master, remote, conf)
        store = open_store(store_url(config))
        progress = None if as_json or watch or not cli.err.is_terminal \
            else ProgressObserver(cli.err)
        set_up = time.perf_counter() - setting_up
        # The engine as the page, serve and replay build it: early reads, Spark started.
        engine = start_engine(config, store, spark=settings, observer=progress)
        if watch:
            from headwater.cli._watch import watch_sync

            raise typer.Exit(watch_sync(engine, as_json, cli.out, cli.err))
        if started is not None:
            engine.steps.add("cli_start", started)
        engine.steps.add("cli_setup", set_up)
        with stop_on_signals(engine.request_stop), progress or nullcontext():
            # Oldest first: a resumed run, then (unless it did not succeed) the new one.
            results = [engine.run()] if one_run else engine.sync()
        if as_json:
            cli.emit_json(sync_document(results))
        else:
            for result in results:
                print_result(result, cli.out, cli.err)
        emit("summary-printed")
        # Committed, recorded and printed: the process may end without its teardown.
        # The store's connections close first, as the teardown would close them: SQLite
        # then folds its write-ahead log into the database file and removes it.
        store.close()
        leave_when_done()
        # The new run starts only after the resumed one succeeded (or warned): the last
        # result decides.
        if results[-1].status != "succeeded":
            raise typer.Exit(sync_exit_code(results[-1]))


def register(app: typer.Typer) -> None:
    app.command()(sync)
