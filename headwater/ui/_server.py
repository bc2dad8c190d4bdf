"""The page's server on a thread of its own, so the main thread keeps the signals.

``headwater ui`` and ``headwater serve --ui`` start it, then wait in the main
thread for SIGTERM/SIGINT as ``serve`` does (:func:`headwater.cli._stop.stop_on_signals`);
:meth:`UiServer.shutdown` then asks the syncs the page started to stop after
their commits in flight, waits for them, and closes the server.
"""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web

from headwater._listen import LOOPBACK, http_url
from headwater.errors import HeadwaterError
from headwater.ui import DEFAULT_PORT
from headwater.ui._app import ACTIONS, FOLDER

#: The port ``headwater ui`` listens on unless told otherwise.


class UiServer:
    """Serves ``app`` on ``host:port`` (port 0: any free one) from a background thread."""

    def __init__(self, app: web.Application, host: str = LOOPBACK,
                 port: int = DEFAULT_PORT) -> None:
        self.app = app
        self.host = host
        self.port = port
        self._loop = asyncio.new_event_loop()
        self._runner = web.AppRunner(app, access_log=None)
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name="hw-ui", daemon=True)

    @property
    def url(self) -> str:
        return http_url(self.host, self.port)

    def start(self) -> None:
        """Read the folder, then listen; returns once the socket is bound (raises if it
        cannot be).  The folder's files first (validated, their connectors' and
        destinations' modules imported, about a second for a few files): every page and
        the first ``/metrics`` scrape need them, and need not wait for them."""
        self.app[FOLDER].connections()
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise HeadwaterError(f"cannot listen on {self.host}:{self.port}: "
                                 f"{self._failure}") from self._failure

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, self.host, self.port)
            self._loop.run_until_complete(site.start())
            self.port = int(self._runner.addresses[0][1])
        except BaseException as exc:
            self._failure = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    def shutdown(self, reason: str) -> None:
        """Stop the page's jobs after their commits in flight, wait for them, then close."""
        self.app[ACTIONS].shutdown(reason)
        self.close()

    def close(self) -> None:
        """Stop listening (the jobs are left alone: see :meth:`shutdown`)."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
