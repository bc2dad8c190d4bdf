"""``headwater ui DIR``: a web page over a folder of connection files and the metadata store.

An aiohttp application (:func:`create_app`) that serves the page's static
files and the JSON API the page uses (``docs/ui.md``): connections with their
schedules and recent runs, a connection's streams and history, a run's figures
per stream, checkpoint and partition, its log lines; and the actions "sync
now", stop, replay, backfill (plan first) and reset, each through the CLI's
own code (:mod:`headwater.operations`).  Safety: loopback by default, a token
beyond it, a custom header and the same origin for every POST, secrets masked
in every answer (:mod:`headwater.ui._security`).

Example::

    app = create_app(Path("connections"))
    server = UiServer(app, "127.0.0.1", 8321)
    server.start()          # serves from a thread
    ...
    server.shutdown("done") # stops the syncs it started after their commits
"""

from headwater.ui._app import create_app
from headwater.ui._security import TOKEN_ENV, check_bind, is_loopback
from headwater.ui._server import DEFAULT_PORT, UiServer

__all__ = ["DEFAULT_PORT", "TOKEN_ENV", "UiServer", "check_bind", "create_app", "is_loopback"]
