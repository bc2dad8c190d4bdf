"""A small OpenLineage HTTP receiver for tests: a threaded ``http.server`` on 127.0.0.1.

It keeps every event POSTed to ``/api/v1/lineage`` (the client's default
endpoint) with its ``Authorization`` header, and answers ``status`` (201 by
default; 500 plays a receiver that is up and failing).  ``closed_port()`` gives
a port nothing listens on: a receiver that is down.

Example::

    with LineageReceiver() as receiver:
        ...sync with lineage: {url: receiver.url}...
    [start, complete] = receiver.events
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


class LineageReceiver:
    def __init__(self, status: int = 201) -> None:
        self.status = status
        self.events: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/") == "/api/v1/lineage":
                    with receiver._lock:
                        receiver.events.append(json.loads(body))
                        receiver.headers.append(dict(self.headers))
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: pytest shows what the test asserts

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> LineageReceiver:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()

    def events_of(self, run_uuid: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["run"]["runId"] == run_uuid]


def closed_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago and that nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
