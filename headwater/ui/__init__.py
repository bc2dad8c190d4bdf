"""``headwater ui DIR``: a web page over a folder of connection files and the metadata store.

An aiohttp application (:func:`create_app`) that serves the page's static
files and the JSON API the page uses (``docs/ui.md``): connections with their
schedules and recent runs, a connection's streams and history, a run's figures
per stream, checkpoint and partition, its log lines (also as a file to download); each
connection's health (late, stale, a store that does not answer); and the actions "sync
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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: The page's port unless ``--port`` says otherwise.
DEFAULT_PORT = 8321
#: The environment variable holding the token API clients must send.
TOKEN_ENV = "HEADWATER_UI_TOKEN"

if TYPE_CHECKING:
    from headwater.ui._app import create_app
    from headwater.ui._security import check_bind, is_loopback
    from headwater.ui._server import UiServer

#: Imported when first used: the CLI imports this package for its option defaults
#: above, and every command would otherwise pay for aiohttp (0.3 CPU seconds).
_LAZY = {"create_app": "_app", "check_bind": "_security", "is_loopback": "_security",
         "UiServer": "_server"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"headwater.ui.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DEFAULT_PORT", "TOKEN_ENV", "UiServer", "check_bind", "create_app", "is_loopback"]
