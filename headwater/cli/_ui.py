"""``headwater ui DIR``: the web page over a folder of connections (``docs/ui.md``).

It stops like ``serve`` (:mod:`headwater.cli._serve`): the first SIGTERM or
SIGINT starts nothing new and asks the syncs the page started to stop after
their commits in flight (the next sync resumes them); once they have ended the
process exits 0.  A second one aborts at once, leaving them ``running`` as a
killed sync does.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from headwater.cli import _common as opt
from headwater.cli._stop import STOPPED_EXIT_CODE, stop_on_signals
from headwater.serve import RunsInProgress, Scheduler
from headwater.ui import DEFAULT_PORT, TOKEN_ENV

if TYPE_CHECKING:
    from headwater.ui import UiServer

HostOpt = Annotated[str, typer.Option(help="Address to listen on; beyond loopback a token "
                                           "is required.")]
PortOpt = Annotated[int, typer.Option(help="Port to listen on.")]
TokenOpt = Annotated[str | None, typer.Option(
    envvar=TOKEN_ENV, show_envvar=True,
    help="Token API clients must send (Authorization: Bearer TOKEN).")]


def start_page(folder: Path, host: str, port: int, token: str | None, store: str | None,
               runs: RunsInProgress, scheduler: Scheduler | None = None) -> UiServer:
    """Check the safety rules, then serve the page from a thread; returns the server.
    ``scheduler``: ``serve --ui``'s, whose health ``/metrics`` adds."""
    from headwater.cli import _common as cli
    from headwater.ui import UiServer, check_bind, create_app

    check_bind(host, token)
    server = UiServer(create_app(folder, store, token=token, runs=runs, scheduler=scheduler),
                      host, port)
    server.start()
    cli.err.print(f"web page on {server.url}/" + ("  (token required)" if token else ""),
                  highlight=False, markup=False)
    return server


def ui(
    folder: Annotated[Path, typer.Argument(help="Folder of connection files.", metavar="DIR",
                                           exists=True, file_okay=False)],
    host: HostOpt = "127.0.0.1",
    port: PortOpt = DEFAULT_PORT,
    token: TokenOpt = None,
    store: Annotated[str | None, typer.Option(
        help="One metadata store URL for every connection (default: each file's own).")
    ] = None,
    verbose: opt.VerboseOpt = 0,
) -> None:
    """A web page over the connections in DIR and their runs, with sync/stop/replay buttons.

    SIGTERM or Ctrl-C stops the syncs the page started after their commits in
    flight (the next sync resumes them), then exits 0; a second one aborts.
    """
    from headwater.cli import _common as cli
    cli.setup_logging(max(verbose, 1), as_json=False)
    with cli.handled(False):
        runs = RunsInProgress()
        server = start_page(folder, host, port, token, store, runs)
        stop = threading.Event()
        reasons: list[str] = []

        def request_stop(reason: str) -> None:
            reasons.append(reason)
            cli.err.print(f"[yellow]{reason}: the syncs in progress stop after their commits "
                          "in flight and the next sync resumes them[/]")
            stop.set()

        try:
            with stop_on_signals(request_stop):
                while not stop.wait(0.5):
                    pass
                server.shutdown(reasons[0] if reasons else "stopping")
        except KeyboardInterrupt:
            cli.err.print("[red]aborted:[/] the syncs in progress are left unfinished; the "
                          "next sync of each connection resumes its run")
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(STOPPED_EXIT_CODE)
        cli.err.print("stopped: every sync the page started has ended", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(ui)
